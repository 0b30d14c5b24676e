package gateway

import (
	"errors"
	"fmt"
)

var (
	ErrTokenRequired    = errors.New("gateway: Fencing-Token header required")
	ErrUnknownOperation = errors.New("gateway: unknown operation")
	ErrBadRequest       = errors.New("gateway: bad request")
	ErrBodyTooLarge     = errors.New("gateway: request body too large")
	// ErrContentEncoding is a body sent with a content coding (gzip, br…):
	// the gateway decodes none.
	ErrContentEncoding = errors.New("gateway: unsupported content encoding")
	ErrNotReady        = errors.New("gateway: not ready")
	// ErrShuttingDown: the gateway stopped lease waits to shut down.
	ErrShuttingDown = errors.New("gateway: shutting down")
	// ErrOverloaded is a write that waited too long for a turn at the
	// admission gate; it was not read, so nothing was written.
	ErrOverloaded   = errors.New("gateway: overloaded")
	ErrNoRoute      = errors.New("gateway: no such endpoint")
	ErrMethod       = errors.New("gateway: method not allowed")
	ErrUnauthorized = errors.New("gateway: unauthorized")
	ErrForbidden    = errors.New("gateway: forbidden")

	// ErrTooManyConnections is a connection past the API listener's
	// limit: refused before any request of it was read.
	ErrTooManyConnections = errors.New("gateway: too many connections")
)

// badRequest wraps a description of what is wrong with a request.
func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}

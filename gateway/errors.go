package gateway

import (
	"fmt"

	"github.com/fencegw/fencegw/outcome"
)

var (
	ErrTokenRequired    = outcome.New("gateway: Fencing-Token header required", outcome.Refused)
	ErrUnknownOperation = outcome.New("gateway: unknown operation", outcome.Refused)
	ErrBadRequest       = outcome.New("gateway: bad request", outcome.Refused)
	ErrBodyTooLarge     = outcome.New("gateway: request body too large", outcome.Refused)
	// ErrContentEncoding is a body sent with a content coding (gzip, br…):
	// the gateway decodes none.
	ErrContentEncoding = outcome.New("gateway: unsupported content encoding", outcome.Refused)
	ErrNotReady        = outcome.New("gateway: not ready", outcome.NotApplied)
	// ErrShuttingDown: the gateway stopped lease waits to shut down.
	ErrShuttingDown = outcome.New("gateway: shutting down", outcome.NotApplied)
	// ErrOverloaded is a write that waited too long for a turn at the
	// admission gate; it was not read, so nothing was written.
	ErrOverloaded   = outcome.New("gateway: overloaded", outcome.NotApplied)
	ErrNoRoute      = outcome.New("gateway: no such endpoint", outcome.Refused)
	ErrMethod       = outcome.New("gateway: method not allowed", outcome.Refused)
	ErrUnauthorized = outcome.New("gateway: unauthorized", outcome.Refused)
	ErrForbidden    = outcome.New("gateway: forbidden", outcome.Refused)

	// ErrTooManyConnections is a connection past the API listener's
	// limit: refused before any request of it was read.
	ErrTooManyConnections = outcome.New("gateway: too many connections", outcome.NotApplied)
)

// badRequest wraps a description of what is wrong with a request.
func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}

package gateway

import (
	"errors"
	"fmt"

	"github.com/fencegw/fencegw/tokens"
)

var (
	ErrTokenRequired    = errors.New("gateway: Fencing-Token header required")
	ErrUnknownOperation = errors.New("gateway: unknown operation")
	ErrBadRequest       = errors.New("gateway: bad request")
	ErrBodyTooLarge     = errors.New("gateway: request body too large")
	ErrUnavailable      = errors.New("gateway: unavailable")
	// ErrOutcomeUnknown marks a 503 after which the write may have
	// committed: the connection broke after the batch was sent.
	ErrOutcomeUnknown = errors.New("gateway: outcome unknown")
	ErrNotReady       = errors.New("gateway: not ready")
	// ErrOverloaded is a write that waited too long for a turn at the
	// admission gate; it was not read, so nothing was written.
	ErrOverloaded   = errors.New("gateway: overloaded")
	ErrNoRoute      = errors.New("gateway: no such endpoint")
	ErrMethod       = errors.New("gateway: method not allowed")
	ErrUnauthorized = errors.New("gateway: unauthorized")
	ErrForbidden    = errors.New("gateway: forbidden")
)

// StaleTokenError is a write refused by the fence: Presented is older than
// Current (or equal to it on a strict resource).
type StaleTokenError struct {
	Resource  string
	Presented tokens.Token
	Current   tokens.Token
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("gateway: stale token %s for %s: the fence is at %s", e.Presented, e.Resource, e.Current)
}

// PreconditionError is an operation whose statement did not affect the
// number of rows the policy expects; nothing was written.
type PreconditionError struct {
	Operation string
	Message   string
}

func (e *PreconditionError) Error() string { return "gateway: precondition failed: " + e.Message }

// ConstraintError is a write refused by a PostgreSQL constraint; nothing
// was written.
type ConstraintError struct {
	Constraint string
	Message    string
}

func (e *ConstraintError) Error() string { return "gateway: constraint violated: " + e.Message }

// badRequest wraps a description of what is wrong with a request.
func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}

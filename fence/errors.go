package fence

import (
	"errors"
	"fmt"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

var (
	// ErrUnavailable: PostgreSQL could not be asked or failed mid-way.
	// Nothing was written unless the error also wraps ErrOutcomeUnknown.
	ErrUnavailable = errors.New("fence: unavailable")
	// ErrOutcomeUnknown marks a failure after the commit was sent: the
	// request may have been applied. Retry only with the same key.
	ErrOutcomeUnknown = errors.New("fence: outcome unknown")
	// ErrKeyInFlight marks a keyed request that this attempt did not
	// apply while another attempt with its key may still: the key's
	// outcome is unknown until a retry with it gets a final answer.
	ErrKeyInFlight = errors.New("fence: an earlier attempt with this idempotency key may still be applied")
	// ErrConflict: the request's fences contradict each other (two roles of
	// one write on one resource, one resource under two tokens).
	ErrConflict = errors.New("fence: conflicting fences")
	// ErrValue: PostgreSQL or pgx refused an argument value for its column
	// (out of range, not encodable); nothing was written.
	ErrValue = errors.New("fence: argument value refused")
)

// StaleTokenError is a request refused by a fence: Presented is older than
// Current (or equal to it on a strict resource). Nothing was written.
type StaleTokenError struct {
	Role      string // "" for an operation of one resource
	Resource  string
	Presented tokens.Token
	Current   tokens.Token
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("fence: stale token %s for %s: the fence is at %s", e.Presented, e.Resource, e.Current)
}

// DeadlineError is a request that reached PostgreSQL after its business
// deadline (Request.NotAfter), by the database's clock: nothing was
// written.
type DeadlineError struct {
	NotAfter time.Time
	At       string // the database's clock when it refused, as it said it
}

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("fence: the request's deadline %s had passed when it reached PostgreSQL (%s by its clock); nothing was written",
		e.NotAfter.UTC().Format(time.RFC3339Nano), e.At)
}

// PreconditionError is a statement that did not affect the number of rows
// its operation expects (e.g. a debit that would overdraw).
type PreconditionError struct {
	Operation string
	Message   string
}

func (e *PreconditionError) Error() string { return "fence: precondition failed: " + e.Message }

// ConstraintError is a write refused by a PostgreSQL constraint, or by a
// guard trigger (Constraint "fencegw_guard") because it touched a row of
// a resource it is not fenced on.
type ConstraintError struct {
	Constraint string
	Message    string
}

func (e *ConstraintError) Error() string { return "fence: constraint violated: " + e.Message }

// KeyMismatchError is an idempotency key reused for another request.
type KeyMismatchError struct{ Key string }

func (e *KeyMismatchError) Error() string {
	return fmt.Sprintf("fence: idempotency key %q was first used with different arguments", e.Key)
}

// WriteError names the write of a batch that refused it; the whole batch
// was rolled back.
type WriteError struct {
	Index     int
	Operation string // the write's, as the request named it
	Err       error
}

func (e *WriteError) Error() string { return fmt.Sprintf("write %d: %v", e.Index, e.Err) }
func (e *WriteError) Unwrap() error { return e.Err }

// SQLError is an error a policy statement raised that fencegw does not
// interpret itself: an application trigger's or function's RAISE, a
// permission denied. Nothing of the write was applied. The gateway
// answers it as the policy's sql_errors say, or as an internal error.
type SQLError struct {
	Operation string
	Code      string // the SQLSTATE
	Message   string // the error's primary message, as raised
	// Mapped: the policy answers the SQLSTATE (sql_errors, or the PT
	// class): an application's refusal, final. Otherwise it is an
	// internal error, not a refusal.
	Mapped bool
	Err    error // the driver's error, for the log
}

func (e *SQLError) Error() string {
	return fmt.Sprintf("fence: operation %s: %s (SQLSTATE %s)", e.Operation, e.Message, e.Code)
}

func (e *SQLError) Unwrap() error { return e.Err }

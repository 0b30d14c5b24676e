// The errors a write can end in, each declaring what it means for the
// request (package outcome): applied, refused, not applied or unknown, and
// whether a refusal settles its idempotency key.

package fence

import (
	"fmt"
	"time"

	"github.com/fencegw/fencegw/outcome"
	"github.com/fencegw/fencegw/tokens"
)

var (
	// ErrUnavailable: PostgreSQL could not be asked or failed mid-way.
	// Nothing was written unless the error also wraps ErrOutcomeUnknown.
	ErrUnavailable = outcome.New("fence: unavailable", outcome.NotApplied)
	// ErrOutcomeUnknown marks a failure after the commit was sent: the
	// request may have been applied. Retry only with the same key.
	ErrOutcomeUnknown = outcome.New("fence: outcome unknown", outcome.Unknown)
	// ErrKeyInFlight marks a keyed request that this attempt did not
	// apply while another attempt with its key may still: the key's
	// outcome is unknown until a retry with it gets a final answer.
	ErrKeyInFlight = outcome.New("fence: an earlier attempt with this idempotency key may still be applied", outcome.Unknown)
	// ErrConflict: the request's fences contradict each other (two roles of
	// one write on one resource, one resource under two tokens).
	ErrConflict = outcome.New("fence: conflicting fences", outcome.Refused)
	// ErrValue: PostgreSQL or pgx refused an argument value for its column
	// (out of range, not encodable); nothing was written.
	ErrValue = outcome.NewSettling("fence: argument value refused")
)

// StaleTokenError is a request refused by a fence: Presented is older than
// Current (or equal to it on a strict resource). Nothing was written.
type StaleTokenError struct {
	Role      string // "" for an operation of one resource
	Resource  string
	Presented tokens.Token
	Current   tokens.Token
}

func (e *StaleTokenError) Outcome() outcome.Outcome { return outcome.Refused }
func (e *StaleTokenError) SettlesKey() bool         { return true }

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

func (e *DeadlineError) Outcome() outcome.Outcome { return outcome.Refused }
func (e *DeadlineError) SettlesKey() bool         { return true }

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

func (e *PreconditionError) Error() string            { return "fence: precondition failed: " + e.Message }
func (e *PreconditionError) Outcome() outcome.Outcome { return outcome.Refused }
func (e *PreconditionError) SettlesKey() bool         { return true }

// ConstraintError is a write refused by a PostgreSQL constraint, or by a
// guard trigger (Constraint "fencegw_guard") because it touched a row of
// a resource it is not fenced on.
type ConstraintError struct {
	Constraint string
	Message    string
}

func (e *ConstraintError) Error() string            { return "fence: constraint violated: " + e.Message }
func (e *ConstraintError) Outcome() outcome.Outcome { return outcome.Refused }
func (e *ConstraintError) SettlesKey() bool         { return true }

// KeyMismatchError is an idempotency key reused for another request.
type KeyMismatchError struct{ Key string }

// Outcome: refused, decided on the request alone, so it settles no key.
func (e *KeyMismatchError) Outcome() outcome.Outcome { return outcome.Refused }
func (e *KeyMismatchError) SettlesKey() bool         { return false }

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

// Outcome: a mapped SQLSTATE is the application's refusal, final, and
// settles its key; any other an internal error, not applied.
func (e *SQLError) Outcome() outcome.Outcome {
	if e.Mapped {
		return outcome.Refused
	}
	return outcome.NotApplied
}

func (e *SQLError) SettlesKey() bool { return e.Mapped }

package fence

import (
	"errors"

	"github.com/fencegw/fencegw/tokens"
)

// Outcome is what became of a request, as far as its answer can tell.
//
// The rule the gateway's answers rest on: a request is answered Applied
// only after the COMMIT that made it durable; Refused and NotApplied only
// when nothing of it can commit any more (for a keyed request, see
// SettlesKey: a refusal of the key's attempt is the key's outcome, stored,
// so that no other attempt with the key applies after it); Unknown
// whenever the commit may have happened. A refusal decided inside a
// transaction of several requests depended on the others; if that
// transaction's COMMIT fails, the refusal is decided again alone (runTx)
// before anyone is told.
type Outcome int

const (
	// Applied: the request committed.
	Applied Outcome = iota
	// Refused: nothing was written, and the refusal is final: a stale
	// token, a business deadline passed, a failed precondition, a constraint, an argument PostgreSQL
	// refused, an application's refusal the policy maps (sql_errors, the
	// PT class), a token the authority refused, an idempotency key reused
	// for another request, contradicting fences.
	Refused
	// NotApplied: nothing was written by this attempt, and it may apply
	// if retried: PostgreSQL or the authority was unavailable, a row lock
	// wait ran out, a deadlock, an internal error.
	NotApplied
	// Unknown: the commit was sent and its answer lost; the request may
	// have been applied. Only a retry with the same idempotency key can
	// tell.
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case Applied:
		return "applied"
	case Refused:
		return "refused"
	case NotApplied:
		return "not-applied"
	}
	return "unknown"
}

// OutcomeOf says what err, an error of Store.Apply or of the checks before
// it (the authority's), means for the request: nil is Applied.
func OutcomeOf(err error) Outcome {
	var (
		stale    *StaleTokenError
		precond  *PreconditionError
		constr   *ConstraintError
		mismatch *KeyMismatchError
		deadline *DeadlineError
		sqlErr   *SQLError
	)
	switch {
	case err == nil:
		return Applied
	case errors.Is(err, ErrOutcomeUnknown), errors.Is(err, ErrKeyInFlight):
		return Unknown
	case errors.As(err, &stale), errors.As(err, &precond), errors.As(err, &constr), errors.As(err, &mismatch), errors.As(err, &deadline),
		errors.Is(err, ErrValue), errors.Is(err, ErrConflict), errors.Is(err, tokens.ErrRejected):
		return Refused
	case errors.As(err, &sqlErr):
		if sqlErr.Mapped {
			return Refused
		}
		return NotApplied
	case errors.Is(err, ErrUnavailable), errors.Is(err, tokens.ErrHalted):
		return NotApplied
	}
	return Unknown
}

// SettlesKey reports whether err, a keyed request's refusal, must become
// its idempotency key's outcome: it was decided against state that
// changes (a fence, a row, the authority's word on a lease), so another
// attempt with the key, queued somewhere or sent later, could otherwise
// be applied after this one was refused. A refusal decided on the request
// alone (an idempotency key reused for another request, contradicting
// fences) or on a token the authority never issued (storing it would let
// anyone who guesses a key spoil it for its owner) does not settle it.
func SettlesKey(err error) bool {
	var rejected *tokens.RejectedError
	if errors.As(err, &rejected) {
		return rejected.Issued
	}
	return judgedOnRows(err)
}

// judgedOnRows reports whether err is a final refusal that PostgreSQL
// decided against what the rows held: a stale token, a failed
// precondition, a constraint, a value refused, an application's refusal
// the policy maps.
func judgedOnRows(err error) bool {
	var (
		stale    *StaleTokenError
		precond  *PreconditionError
		constr   *ConstraintError
		deadline *DeadlineError
		sqlErr   *SQLError
	)
	switch {
	case errors.As(err, &stale), errors.As(err, &precond), errors.As(err, &constr), errors.As(err, &deadline), errors.Is(err, ErrValue):
		return true
	case errors.As(err, &sqlErr):
		return sqlErr.Mapped
	}
	return false
}

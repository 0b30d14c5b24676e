// Classification of the answer: what the error of a round trip means for
// its request. sessionLost is the one answer to whether the session ended,
// lost the one rule for what a lost session means (unknown if the round
// trip carried the commit, not applied otherwise); classify turns
// PostgreSQL's errors into this package's; answerFailed answers a request
// of a transaction from its error (answerOrRetry, in several.go, may send
// it to a retry alone instead).

package fence

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// SQLSTATEs raised by the fencegw schema's functions.
const (
	sqlstateStale        = "FG409"
	sqlstatePrecondition = "FG412"
	sqlstateDeadline     = "FG410" // not_after: the business deadline passed
	sqlstateGuard        = "FG403" // a guard trigger (package guard)
	sqlstateReplay       = "FG208" // claim_key: the key completed before
	sqlstateMismatch     = "FG422" // claim_key, settle_key: another request's key
)

// sessionLost is the one answer to "did this error end the session, or
// may it have?": a FATAL or PANIC from the server, or anything that is not
// a server error at all (a broken connection, a timeout that closed it).
// An ERROR only aborts the transaction; the session carries on.
func sessionLost(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return true
	}
	switch cmp.Or(pgErr.SeverityUnlocalized, pgErr.Severity) {
	case "FATAL", "PANIC":
		return true
	}
	return false
}

// lost is the one rule for a request whose session failed: if the round
// trip that failed carried the commit (an implicit transaction's Sync, or
// COMMIT) and may have left, the outcome is unknown; otherwise nothing was
// applied, since PostgreSQL rolls back a transaction whose session ends
// before COMMIT.
func lost(err error, committing bool) error {
	if committing && !sentNothing(err) {
		return fmt.Errorf("%w (%w): the connection to PostgreSQL failed after the commit was sent: %w", ErrUnavailable, ErrOutcomeUnknown, err)
	}
	return fmt.Errorf("%w: the connection to PostgreSQL failed before the commit, nothing was written: %w", ErrUnavailable, err)
}

// sentNothing reports whether err proves that the round trip never left.
// pgx marks its "conn closed" error safe to retry, but it also returns it
// when a read fails after a whole batch went out (MultiResultReader
// NextResult drops the read error, and the next read finds the connection
// closed): that batch may have committed. So that error proves nothing.
func sentNothing(err error) bool {
	return pgconn.SafeToRetry(err) && !errors.Is(err, pgconn.ErrConnClosed)
}

// failedAt locates a failure inside a request's pipeline: the fence that
// raised (an index into Request.fences) or the write whose statement did.
type failedAt struct {
	fence, write int // -1 when not that
}

var nowhere = failedAt{-1, -1}

// classify turns the error of a request's round trip into this package's
// errors. committing: the round trip carried the commit.
func classify(err error, committing bool, req *Request, at failedAt) error {
	if commitWarned(err) {
		return err // its outcome is unknown, and it says why
	}
	if sessionLost(err) {
		if sql, cause, ok := unencodable(err); ok {
			if at.write < 0 {
				// It surfaces at the first result read, a fence's.
				at.write = onlyWriteRunning(req, sql)
			}
			return inWrite(req, at, &encodeError{cause: cause})
		}
		return lost(err, committing)
	}
	var pgErr *pgconn.PgError
	errors.As(err, &pgErr) // sessionLost said it is one
	if at.write >= 0 {
		// What the policy maps, the policy answers: before the classes
		// below, which would answer a mapped 23514 as a constraint with
		// the application's message.
		if _, mapped := req.Writes[at.write].Operation.SQLError(pgErr.Code); mapped {
			return inWrite(req, at, &SQLError{Operation: opName(req, at), Code: pgErr.Code, Message: pgErr.Message, Mapped: true, Err: err})
		}
	}
	switch {
	case pgErr.Code == sqlstateStale && at.fence >= 0:
		f := req.fences[at.fence]
		current, perr := tokens.Parse(pgErr.Detail)
		if perr != nil {
			return fmt.Errorf("fence: the fence raised without a current token: %w", err)
		}
		current.Permit = f.token.Permit // a permit slot's fence holds that slot's tokens: E:R#k, as presented
		w := &req.Writes[f.write]
		return inWrite(req, failedAt{-1, f.write}, &StaleTokenError{
			Role: w.Operation.Roles[f.role].Name, Resource: f.resource, Presented: f.token.Unsigned(), Current: current,
		})
	case pgErr.Code == sqlstateDeadline:
		return &DeadlineError{NotAfter: req.NotAfter, At: pgErr.Detail}
	case pgErr.Code == sqlstatePrecondition:
		return inWrite(req, at, &PreconditionError{Operation: opName(req, at), Message: pgErr.Message})
	case pgErr.Code == sqlstateGuard:
		return inWrite(req, at, &ConstraintError{Constraint: "fencegw_guard", Message: pgErr.Message})
	case pgerrcode.IsIntegrityConstraintViolation(pgErr.Code):
		return inWrite(req, at, &ConstraintError{Constraint: pgErr.ConstraintName, Message: pgErr.Message})
	case pgerrcode.IsDataException(pgErr.Code):
		return inWrite(req, at, fmt.Errorf("%w: %s (SQLSTATE %s)", ErrValue, pgErr.Message, pgErr.Code))
	case pgErr.Code == pgerrcode.LockNotAvailable:
		return fmt.Errorf("%w: a resource stayed locked by another write past lock_timeout, nothing was written: %w", ErrUnavailable, err)
	case pgerrcode.IsTransactionRollback(pgErr.Code), pgerrcode.IsInsufficientResources(pgErr.Code),
		pgerrcode.IsOperatorIntervention(pgErr.Code), pgerrcode.IsConnectionException(pgErr.Code):
		return fmt.Errorf("%w: PostgreSQL rolled the write back, retry: %w", ErrUnavailable, err)
	}
	if at.write >= 0 {
		return inWrite(req, at, &SQLError{Operation: opName(req, at), Code: pgErr.Code, Message: pgErr.Message, Err: err})
	}
	return inWrite(req, at, fmt.Errorf("fence: operation %s: %w", opName(req, at), err))
}

// unencodable reports whether err is pgx refusing to encode an argument
// for its column (3e9 for an int4), and returns the statement's SQL and
// the cause. Nothing can have committed: sendBatch sends nothing then;
// pgx's SendBatch, closing the connection, sends the statements it had
// queued before that argument, then Terminate, never the Sync or COMMIT
// after it, and the backend runs them (a fence may wait for its row lock)
// and rolls back when it reads the Terminate. (pgx's other step,
// "prepare", talks to the server like any round trip.)
func unencodable(err error) (sql string, cause error, ok bool) {
	var be *buildError
	if errors.As(err, &be) {
		return be.sql, be.err, true
	}
	var pre pgx.ErrPreprocessingBatch
	if errors.As(err, &pre) && strings.HasPrefix(pre.Error(), "error preprocessing batch (build)") {
		return pre.SQL(), pre.Unwrap(), true
	}
	return "", nil, false
}

// onlyWriteRunning is the index of the one write of req that has a
// statement sql, or -1 if none or several have.
func onlyWriteRunning(req *Request, sql string) int {
	found := -1
	for wi := range req.Writes {
		if !slices.ContainsFunc(req.Writes[wi].Operation.Statements, func(st policy.Statement) bool { return st.SQL == sql }) {
			continue
		}
		if found >= 0 {
			return -1
		}
		found = wi
	}
	return found
}

// encodeError is an argument pgx cannot encode for its column (3e9 for an
// int4). Its text names no driver internals; the cause stays in the chain.
type encodeError struct{ cause error }

func (e *encodeError) Error() string {
	return "fence: argument value refused: an argument does not fit its database column (check the operation's bounds)"
}

func (e *encodeError) Unwrap() []error { return []error{ErrValue, e.cause} }

// inWrite names the write of a batch an error belongs to.
func inWrite(req *Request, at failedAt, err error) error {
	if at.write >= 0 {
		return req.InWrite(at.write, err)
	}
	return err
}

func opName(req *Request, at failedAt) string {
	if at.write >= 0 {
		return req.Writes[at.write].Operation.Name
	}
	return req.Writes[0].Operation.Name
}

// answerFailed answers a request whose part of the pipeline raised.
func answerFailed(p *pending, err error, at failedAt) {
	var pgErr *pgconn.PgError
	if p.req.IdempotencyKey != nil && errors.As(err, &pgErr) {
		switch pgErr.Code {
		case sqlstateReplay:
			p.replay = true
			return
		case sqlstateMismatch:
			p.err = &KeyMismatchError{Key: p.req.IdempotencyKey.Value}
			return
		}
	}
	p.resp, p.err = Response{}, classify(err, false, p.req, at)
}

// lockTimedOut reports whether err is lock_timeout ending a wait for a row
// another transaction holds.
func lockTimedOut(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.LockNotAvailable
}

package sqlfront

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Turns. A session has work in PostgreSQL from the first message it
// sends there while idle until it is idle again: no transaction open,
// nothing owed, no error to skip past. For that span it holds a turn at
// the front's gate (package admission), at most MaxTransactions at once,
// shared fairly between clients as the HTTP path's writes are: a turn
// given back goes to a waiting session of the client that holds the
// fewest. So one client's many connections, all busy, slow that client
// and not the others.
//
// A turn is held for the whole of a transaction, the waits for its
// client and on etcd included: a transaction may hold locks (its fence
// rows), and one that gave its turn back could wait to take it again
// behind the very sessions that wait for its locks. Waiting for its
// client outside a transaction, a session holds none.

var (
	errNoTurn        = errors.New("sqlfront: no turn")
	errCancelRequest = errors.New("sqlfront: cancelled by the client")
	errShuttingDown  = errors.New("sqlfront: shutting down")
)

// takeTurn waits for the session's turn before f goes to PostgreSQL,
// unless it holds one. A refusal is answered here, nothing of f sent:
// refused is then true.
func (s *session) takeTurn(f frame) (refused bool, err error) {
	if s.turn.Held() {
		return false, nil
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	s.waitCancel.Store(&cancel)
	defer s.waitCancel.Store(nil)
	select {
	case <-s.stop:
		cancel(errShuttingDown)
	default:
	}
	err = s.turn.Take(ctx)
	if err == nil {
		return false, nil
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errShuttingDown):
		return true, fatal(codeShutdown, "terminating connection: the SQL front is shutting down")
	case errors.Is(cause, errCancelRequest):
		return true, s.refuseUnsent(f, refusal(codeCancelled, "canceling statement due to user request: it waited for a turn, and nothing of it was sent to PostgreSQL", ""))
	}
	s.log.Info("no turn for a statement in time", "error", err.Error())
	s.srv.cfg.Metrics.noTurn()
	return true, s.refuseUnsent(f, refusal(codeNoTurn,
		fmt.Sprintf("the SQL front has its limit of %d transactions in flight, and this statement waited %v for a turn: nothing of it was sent to PostgreSQL",
			s.srv.cfg.MaxTransactions, s.srv.cfg.QueueTimeout),
		"retry it; the front's turns are shared between clients (--pg-max-transactions, --pg-queue-timeout)"))
}

// cancelWait ends the session's wait for a turn, if it waits, for
// cause, and reports whether it did. It may run on any goroutine.
func (s *session) cancelWait(cause error) bool {
	c := s.waitCancel.Swap(nil)
	if c != nil {
		(*c)(cause)
	}
	return c != nil
}

// releaseTurn gives the session's turn back once it is idle.
func (s *session) releaseTurn() {
	if s.turn.Held() && s.tx == 'I' && !s.failed && len(s.pending) == 0 && len(s.toPG) == 0 {
		s.turn.Release()
	}
}

// refuseUnsent answers f, refused before it reached PostgreSQL by a
// session idle outside a transaction: a query with se and ReadyForQuery;
// a message of the extended protocol with se, what follows it skipped up
// to the Sync, which the front answers (syncUnsent), as PostgreSQL skips
// after an error.
func (s *session) refuseUnsent(f frame, se *sqlError) error {
	s.send(se.response())
	switch f.typ {
	case 'Q', 'F', 'S': // Query, FunctionCall, Sync: each has its ReadyForQuery
		s.send(&pgproto3.ReadyForQuery{TxStatus: s.tx})
	default:
		s.failed = true
	}
	return nil
}

// syncUnsent answers the Sync that ends what the front refused without
// a turn: PostgreSQL, which saw none of it, owes nothing.
func (s *session) syncUnsent() {
	s.failed = false
	s.send(&pgproto3.ReadyForQuery{TxStatus: s.tx})
}

// An explicit transaction: BEGIN, each request (its key claimed first, and,
// among several once one has failed, in a savepoint of its own:
// several.go, pipeline.go), and the
// COMMIT, which stores the keyed requests' answers (idempotency.go). runTx
// is the transaction and its fallback: requests that cannot share it run
// again alone, each a lone write (lone.go) or a transaction of one. tryTx
// runs its rounds: a request that fails is answered or marked for a retry
// (classify.go), and among several its savepoint is rolled back and the
// requests after it are sent again (several.go).

package fence

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/outcome"
)

// pending is one request of an explicit transaction, and its answer.
type pending struct {
	req  *Request
	resp Response
	err  error
	// replay: its key completed in an earlier transaction; answered with
	// the stored response once this transaction is over (answerReplays).
	replay bool
	// retry: it met another transaction in a deadlock or a serialization
	// failure inside a transaction of several requests, and was rolled
	// back to its savepoint; it runs again alone once that transaction is
	// over (the meeting may be the grouping's doing, not its own).
	retry bool
	// unsent: not sent in this transaction: deferred to a retry alone, or
	// answered already, its resource's row lock wait having run out for
	// a request before it.
	unsent bool
	// answered is done once the request is answered: a request in a
	// unit is added to it when made.
	answered sync.WaitGroup
}

// runTx applies reqs in one explicit transaction and gives every request
// in it an answer (resp, err or replay). Several requests are tried whole
// first, without savepoints (several.go); once one has failed, each runs
// again in its own savepoint, so a refused or failing one rolls back
// alone. It pipelines optimistically: every request goes in one round
// trip; if request k fails, PostgreSQL skips the rest of that pipeline, so
// tryTx rolls back to k's savepoint and sends the requests after k again. Keyed
// requests claim their key in their savepoint; their answers are stored in
// the last round trip, with the COMMIT, and no request is answered before
// that COMMIT has succeeded. It runs on conn, which the caller holds, and
// returns the connection it holds at the end: conn, another one if conn
// broke and the requests had to be retried one by one, or nil.
func (s *Store) runTx(ctx context.Context, conn *pgxpool.Conn, reqs []*pending) *pgxpool.Conn {
	if !usable(conn) {
		for _, p := range reqs {
			p.err = errNotUsable
		}
		return conn
	}
	if !s.tryTx(ctx, conn, reqs) {
		var again []*pending
		for _, p := range reqs {
			if p.retry {
				again = append(again, p)
			}
		}
		if again == nil {
			return conn
		}
		reqs = again
	}
	// The transaction failed as a whole before anything committed (a
	// deferred constraint at COMMIT), or some of its requests met another
	// transaction in a deadlock and were rolled back to their savepoints:
	// apply each of them alone, so one bad request cannot fail the others;
	// if one of them breaks the connection, the next gets a new one.
	for i, p := range reqs {
		p.reset()
		var err error
		if conn, err = s.readyConn(ctx, conn); err != nil {
			for _, q := range reqs[i:] {
				q.err = err
			}
			return nil
		}
		if p.req.IdempotencyKey == nil {
			p.resp, p.err = s.applyImplicit(ctx, conn, p.req)
		} else {
			s.tryTx(ctx, conn, []*pending{p})
		}
	}
	return conn
}

// tryTx runs reqs in one transaction and answers its requests. It returns
// true, having rolled back, when a transaction of several requests failed
// as a whole while its session stayed usable: they must be retried alone.
//
// Several requests are first tried without savepoints, which would cost
// every request two statements more, and when none is keyed as one
// implicit transaction, in one round trip (tryImplicit); only if one fails
// does the transaction start again, each request in its own savepoint.
func (s *Store) tryTx(ctx context.Context, conn *pgxpool.Conn, reqs []*pending) (retryAlone bool) {
	if len(reqs) > 1 {
		try := s.tryWhole
		if !slices.ContainsFunc(reqs, func(p *pending) bool { return p.req.IdempotencyKey != nil }) {
			try = s.tryImplicit
		}
		rest, answered, alone := try(ctx, conn, reqs)
		if answered || alone {
			return alone
		}
		reqs = rest
	}
	savepoints := len(reqs) > 1
	// sessionFailed ends a transaction that failed outside any one
	// request, before its COMMIT: nothing was committed, so each request
	// of several gets its own chance alone, on a new connection if this
	// one broke (pgx closes it when it cannot encode one request's
	// argument, whatever the others are).
	sessionFailed := func(err error) bool {
		rollback(conn)
		if savepoints {
			return true
		}
		failAll(reqs, classify(err, false, reqs[0].req, nowhere))
		return false
	}
	next, aborted := 0, -1 // aborted: the request whose savepoint must be rolled back first
	for round := 0; next < len(reqs) || aborted >= 0; round++ {
		if aborted >= 0 {
			// Its own round trip: the transaction is in the aborted state,
			// where pgx could not even prepare the next round's statements.
			if _, err := conn.Exec(ctx, "ROLLBACK TO SAVEPOINT "+savepoint(aborted)); err != nil {
				return sessionFailed(err)
			}
			aborted = -1
			continue
		}
		b := &pgx.Batch{}
		preamble := 0
		if round == 0 {
			b.Queue("BEGIN")
			preamble = 1
			if savepoints {
				b.Queue(groupLockSQL, s.groupLockTimeout)
				preamble = 2
			}
		}
		for i := next; i < len(reqs); i++ {
			if !reqs[i].unsent {
				s.queueInTx(b, reqs[i].req, savepoints, i)
			}
		}
		failed, werr, at, sessionErr := s.readRound(conn.SendBatch(ctx, b), preamble, reqs, next, savepoints)
		if sessionErr != nil {
			return sessionFailed(sessionErr)
		}
		if failed < 0 {
			break
		}
		answerOrRetry(reqs[failed], werr, at, savepoints)
		switch {
		case reqs[failed].retry:
			deferBehind(reqs, failed)
		case savepoints && lockTimedOut(werr):
			failBehind(reqs, failed, werr)
		}
		if !savepoints {
			rollback(conn)
			return false
		}
		next, aborted = failed+1, failed
		for next < len(reqs) && reqs[next].unsent {
			next++ // so that no round is sent empty
		}
	}
	return s.commit(ctx, conn, reqs, savepoints)
}

// reset clears p's answer for another attempt. Only the answer: its caller
// may be waiting on answered, which a rewrite of the whole struct would
// reset under it.
func (p *pending) reset() {
	p.resp, p.err, p.replay, p.retry, p.unsent = Response{}, nil, false, false, false
}

// commit stores the answers of the keyed requests that applied, with the
// COMMIT. It returns true, rolled back, when a transaction of several
// was refused at COMMIT (a deferred constraint): all of it is undone, and
// its requests must be retried alone.
func (s *Store) commit(ctx context.Context, conn *pgxpool.Conn, reqs []*pending, several bool) (retryAlone bool) {
	b := &pgx.Batch{}
	if several {
		b.Queue(unscopeSQL)
	}
	for _, p := range reqs {
		if k := p.req.IdempotencyKey; k != nil && p.err == nil && !p.replay && !p.retry {
			b.Queue(storeSQL, k.Client, k.Scope, k.Value, p.resp.Status, p.resp.Body)
		}
	}
	b.Queue("COMMIT")
	pc := conn.Conn().PgConn()
	sent := heard(pc)
	err := conn.SendBatch(ctx, b).Close()
	if err == nil {
		// Only the gateway's own statements share the round trip: any
		// warning in it is the COMMIT's.
		err = s.warnedSince(pc, sent)
	}
	if err != nil {
		rollback(conn)
		// Refused outright, the COMMIT undid everything: a transaction
		// of several is retried alone. Lost on the way, or answered with
		// a warning, it may have committed, or may not last: unknown.
		if !sessionLost(err) && !commitWarned(err) && several {
			return true
		}
		if several {
			redecideAlone(reqs)
		}
		failAll(reqs, classify(err, true, reqs[0].req, nowhere))
	}
	return false
}

// redecideAlone marks for a retry alone the requests of a transaction of
// several whose COMMIT was lost and that were refused inside it: their
// refusal was judged against what the others wrote (a fence one advanced,
// a balance one spent), which may never have committed. Alone, on another
// connection, each is judged again against what did: its fence row lock
// waits until the old session's transaction has ended, either way.
// Refusals that hold whatever the others did stay: a lock wait that ran
// out, an idempotency key reused for another request.
func redecideAlone(reqs []*pending) {
	for _, p := range reqs {
		// The refusals that settle a key are those PostgreSQL judged
		// against what the rows held.
		if p.err != nil && outcome.SettlesKey(p.err) {
			p.resp, p.err, p.retry = Response{}, nil, true
		}
	}
}

// failAll answers every request of reqs not answered yet with err; one
// to retry was rolled back, and runTx runs it again.
func failAll(reqs []*pending, err error) {
	for _, p := range reqs {
		if p.err == nil && !p.replay && !p.retry {
			p.resp, p.err = Response{}, err
		}
	}
}

func savepoint(i int) string { return "fencegw_w" + strconv.Itoa(i) }

// rollback ends a failed explicit transaction. If it cannot, the pool
// discards the connection on release, which rolls back too.
func rollback(conn *pgxpool.Conn) {
	if conn.Conn().PgConn().TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = conn.Exec(ctx, "ROLLBACK")
}

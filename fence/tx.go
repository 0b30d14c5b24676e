package fence

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pending is one request of an explicit transaction, and its answer.
type pending struct {
	req  *Request
	resp Response
	err  error
	// replay: its key completed in an earlier transaction; answered with
	// the stored response once this transaction is over (answerReplays).
	replay bool
	done   chan struct{} // for a queued request: closed once answered
}

// claimSQL reserves a request's idempotency key for the transaction, or
// raises FG208 (completed: replay it) or FG422 (another request's key);
// see migration 0002.
const claimSQL = "SELECT fencegw.claim_key($1, $2, $3, $4, $5)"

// storeSQL stores a keyed request's answer, in its transaction.
const storeSQL = "UPDATE fencegw.idempotency_keys SET status = $4, response = $5 WHERE (client, operation, key) = ($1, $2, $3)"

// runTx applies batch in one explicit transaction and gives every request
// in it an answer (resp, err or replay). With several requests, each runs
// in its own savepoint, so a refused or failing one rolls back alone. It
// pipelines optimistically: every request goes in one round trip; if
// request k fails, PostgreSQL skips the rest of that pipeline, so runTx
// rolls back to k's savepoint and sends the requests after k again. Keyed
// requests claim their key in their savepoint; their answers are stored in
// the last round trip, with the COMMIT, and no request is answered before
// that COMMIT has succeeded. It runs on conn, which the caller holds, and
// returns the connection it holds at the end: conn, another one if conn
// broke and the requests had to be retried one by one, or nil.
func (s *Store) runTx(ctx context.Context, conn *pgxpool.Conn, batch []*pending) *pgxpool.Conn {
	if !usable(conn) {
		for _, p := range batch {
			p.err = errNotUsable
		}
		return conn
	}
	if !s.tryTx(ctx, conn, batch) {
		return conn
	}
	// The transaction failed as a whole before anything committed (a
	// deferred constraint at COMMIT): apply each request alone, so one bad
	// request cannot fail the others; if one of them breaks the
	// connection, the next gets a new one.
	for i, p := range batch {
		*p = pending{req: p.req, done: p.done}
		var err error
		if conn, err = s.readyConn(ctx, conn); err != nil {
			for _, q := range batch[i:] {
				q.err = err
			}
			return nil
		}
		if p.req.Key == nil {
			p.resp, p.err = s.applyImplicit(ctx, conn, p.req)
		} else {
			s.tryTx(ctx, conn, []*pending{p})
		}
	}
	return conn
}

// tryTx runs batch in one transaction and answers its requests. It returns
// true, having rolled back, when a transaction of several requests failed
// as a whole while its session stayed usable: they must be retried alone.
func (s *Store) tryTx(ctx context.Context, conn *pgxpool.Conn, batch []*pending) (retryAlone bool) {
	savepoints := len(batch) > 1
	// failAll answers every request not answered yet.
	failAll := func(err error) {
		for _, p := range batch {
			if p.err == nil && !p.replay {
				p.resp, p.err = Response{}, err
			}
		}
	}
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
		failAll(classify(err, false, batch[0].req, nowhere))
		return false
	}
	next, aborted := 0, -1 // aborted: the request whose savepoint must be rolled back first
	for round := 0; next < len(batch) || aborted >= 0; round++ {
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
		if round == 0 {
			b.Queue("BEGIN")
		}
		for i := next; i < len(batch); i++ {
			s.queueInTx(b, batch[i].req, savepoints, i)
		}
		failed, werr, at, sessionErr := s.readRound(conn.SendBatch(ctx, b), round == 0, batch, next, savepoints)
		if sessionErr != nil {
			return sessionFailed(sessionErr)
		}
		if failed < 0 {
			break
		}
		settleFailed(batch[failed], werr, at)
		if !savepoints {
			rollback(conn)
			return false
		}
		next, aborted = failed+1, failed
	}

	b := &pgx.Batch{}
	for _, p := range batch {
		if k := p.req.Key; k != nil && p.err == nil && !p.replay {
			b.Queue(storeSQL, k.Client, k.Scope, k.Key, p.resp.Status, p.resp.Body)
		}
	}
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		if !sessionLost(err) && savepoints {
			// Refused at COMMIT (a deferred constraint): all rolled back.
			return sessionFailed(err)
		}
		rollback(conn)
		failAll(classify(err, true, batch[0].req, nowhere))
	}
	return false
}

// queueInTx queues one request of a transaction: in its savepoint when
// there are several, its key claimed first when it has one.
func (s *Store) queueInTx(b *pgx.Batch, req *Request, savepoints bool, i int) {
	if savepoints {
		b.Queue("SAVEPOINT " + savepoint(i))
	}
	if k := req.Key; k != nil {
		b.Queue(claimSQL, k.Client, k.Scope, k.Key, k.Fingerprint[:], k.Retention)
	}
	s.queueRequest(b, req)
	if savepoints {
		b.Queue("RELEASE SAVEPOINT " + savepoint(i))
	}
}

// readRound reads one round's results and renders the answers of the
// requests that ran. It returns the index of the first request that failed
// with a PostgreSQL error, that error and where it arose (failed -1 if
// none), or sessionErr if the session itself failed.
func (s *Store) readRound(br pgx.BatchResults, begin bool, batch []*pending, next int, savepoints bool) (failed int, werr error, at failedAt, sessionErr error) {
	defer br.Close()
	if begin {
		if _, err := br.Exec(); err != nil {
			return -1, nil, nowhere, err
		}
	}
	for i := next; i < len(batch); i++ {
		p := batch[i]
		var err error
		if savepoints {
			_, err = br.Exec()
		}
		if err == nil && p.req.Key != nil {
			_, err = br.Exec()
		}
		var results []Result
		at := nowhere
		if err == nil {
			results, at, err = readRequest(br, p.req)
		}
		if err == nil && savepoints {
			_, err = br.Exec()
		}
		switch {
		case err == nil:
			p.resp, p.err = s.render(p.req, results), nil
		case sessionLost(err):
			return -1, nil, nowhere, err
		default:
			return i, err, at, nil
		}
	}
	if err := br.Close(); err != nil {
		return -1, nil, nowhere, err
	}
	return -1, nil, nowhere, nil
}

// settleFailed answers a request whose part of the pipeline raised.
func settleFailed(p *pending, err error, at failedAt) {
	var pgErr *pgconn.PgError
	if p.req.Key != nil && errors.As(err, &pgErr) {
		switch pgErr.Code {
		case sqlstateReplay:
			p.replay = true
			return
		case sqlstateMismatch:
			p.err = &KeyMismatchError{Key: p.req.Key.Key}
			return
		}
	}
	p.resp, p.err = Response{}, classify(err, false, p.req, at)
}

// answerReplays answers the requests whose key completed earlier with the
// stored response. It reads on conn when it can: with the pool exhausted,
// waiting for a second connection would stall every other request.
func (s *Store) answerReplays(ctx context.Context, conn *pgxpool.Conn, batch []*pending) {
	for _, p := range batch {
		if !p.replay {
			continue
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		var q DB = s.pool
		if conn != nil && usable(conn) {
			q = conn
		}
		p.resp, p.err = storedResponse(rctx, q, p.req.Key)
		cancel()
	}
}

func savepoint(i int) string { return "fencegw_w" + strconv.Itoa(i) }

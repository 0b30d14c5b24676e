package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// executeOne applies a lone queued write the ordinary way, on conn.
func (e *Executor) executeOne(ctx context.Context, conn *pgxpool.Conn, qw *queuedWrite) writeOutcome {
	r, err := e.applyOn(ctx, conn, qw.w, qw.idem)
	return writeOutcome{r, err}
}

// executeBatch applies several writes of one resource in one explicit
// transaction, each in its own savepoint, and answers each write once the
// transaction has committed. It pipelines optimistically: all writes go in
// one round trip; if write k fails, PostgreSQL skips the rest of that
// pipeline, so the gateway rolls back to k's savepoint and sends the writes
// after k again. Keyed writes claim their key in their savepoint, and their
// responses are stored in the last round trip, with the COMMIT; a key that
// completed earlier is replayed after it. It runs on conn, which the
// caller holds, and returns the connection it holds at the end: another
// one if conn broke and the writes had to be retried one by one, or nil.
func (e *Executor) executeBatch(ctx context.Context, conn *pgxpool.Conn, batch []*queuedWrite) *pgxpool.Conn {
	outcomes := make([]writeOutcome, len(batch))
	given := conn
	defer func() {
		if p := recover(); p != nil {
			if conn != given && conn != nil {
				conn.Release() // its own; the caller releases the one it gave
			}
			panic(p) // unanswered: the caller's recover answers every write
		}
		for i, qw := range batch {
			if errors.Is(outcomes[i].err, errReplay) {
				// Its key completed in an earlier transaction: whatever
				// became of this one, that answer stands. Read on the
				// connection in hand: with the pool exhausted, waiting
				// for a second one would stall every other write.
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				var q querier = e.pool
				if conn != nil && usable(conn) {
					q = conn
				}
				r, err := replay(rctx, q, *qw.idem, qw.w.Operation.Name)
				cancel()
				outcomes[i] = writeOutcome{r, err}
			}
			qw.done <- outcomes[i]
		}
	}()
	if !e.tryBatch(ctx, conn, batch, outcomes) {
		return conn
	}
	// The batch failed as a whole, before anything committed (a deferred
	// constraint at COMMIT, an argument pgx cannot encode): run each write
	// alone, so one bad write cannot fail the others; if one of them breaks
	// the connection, the next gets a new one.
	for i, qw := range batch {
		var err error
		if conn, err = e.readyConn(ctx, conn); err != nil {
			for j := i; j < len(batch); j++ {
				outcomes[j] = writeOutcome{err: err}
			}
			return nil
		}
		outcomes[i] = e.executeOne(ctx, conn, qw)
	}
	return conn
}

// tryBatch runs the batch in one transaction and fills outcomes. It
// returns true, having rolled back, when the writes must be retried one by
// one because the batch failed as a whole while its session stayed usable.
func (e *Executor) tryBatch(ctx context.Context, conn *pgxpool.Conn, batch []*queuedWrite, outcomes []writeOutcome) (retryAlone bool) {
	fail := func(from int, err error) {
		for i := from; i < len(batch); i++ {
			if outcomes[i].err == nil {
				outcomes[i] = writeOutcome{err: err}
			}
		}
	}
	// sessionFailed ends a batch that failed outside any one write: nothing
	// was committed. If the connection survived, the writes are retried
	// one by one; if not, they were not applied.
	sessionFailed := func(err error) bool {
		rollback(conn)
		if usable(conn) {
			return true
		}
		fail(0, fmt.Errorf("%w: PostgreSQL failed during a coalesced transaction, nothing was written: %w", ErrUnavailable, err))
		return false
	}
	next, aborted := 0, -1 // aborted: the write whose savepoint must be rolled back first
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
			b.Queue("SAVEPOINT " + savepoint(i))
			if idem := batch[i].idem; idem != nil {
				b.Queue(claimSQL, idem.Client, batch[i].w.Operation.Name, idem.Key, idem.Fingerprint[:], idem.Retention)
			}
			e.queueWrite(b, batch[i].w)
			b.Queue("RELEASE SAVEPOINT " + savepoint(i))
		}
		failedAt, werr, connErr := readBatchRound(conn.SendBatch(ctx, b), round == 0, batch, next, outcomes)
		if connErr != nil {
			return sessionFailed(connErr)
		}
		if failedAt < 0 {
			break
		}
		outcomes[failedAt] = writeOutcome{err: classifyQueued(werr, batch[failedAt])}
		next, aborted = failedAt+1, failedAt
	}

	// Store the keyed writes' responses, then commit, in one round trip.
	b := &pgx.Batch{}
	for i, qw := range batch {
		if outcomes[i].err != nil {
			continue
		}
		if qw.idem != nil {
			b.Queue("UPDATE fencegw.idempotency_keys SET status = $4, response = $5 WHERE (client, operation, key) = ($1, $2, $3)",
				qw.idem.Client, qw.w.Operation.Name, qw.idem.Key, http.StatusOK, outcomes[i].reply.Body)
		}
	}
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.SeverityUnlocalized != "FATAL" && pgErr.SeverityUnlocalized != "PANIC" {
			// Refused at COMMIT (a deferred constraint): all rolled back.
			return sessionFailed(err)
		}
		rollback(conn)
		fail(0, fmt.Errorf("%w (%w): the connection to PostgreSQL failed at commit: %w", ErrUnavailable, ErrOutcomeUnknown, err))
	}
	return false
}

// errReplay marks a keyed write whose key completed before: answered with
// the stored response once the batch is over.
var errReplay = errors.New("gateway: replay")

// classifyQueued classifies a write's failure in a batch, keyed or not.
func classifyQueued(err error, qw *queuedWrite) error {
	var pgErr *pgconn.PgError
	if qw.idem != nil && errors.As(err, &pgErr) {
		switch pgErr.Code {
		case sqlstateReplay:
			return errReplay
		case sqlstateMismatch:
			return &IdempotencyMismatchError{Key: qw.idem.Key}
		}
	}
	return classify(err, qw.w)
}

// readBatchRound reads one round's results into outcomes. It returns the
// index of the first write that failed with a PostgreSQL error and that
// error (-1 if none), or connErr if the session itself failed.
func readBatchRound(br pgx.BatchResults, begin bool, batch []*queuedWrite, next int, outcomes []writeOutcome) (failedAt int, werr, connErr error) {
	defer br.Close()
	failedAt = -1
	if begin {
		if _, err := br.Exec(); err != nil {
			return failedAt, nil, err
		}
	}
	for i := next; i < len(batch); i++ {
		w := batch[i].w
		res := Result{Operation: w.Operation.Name, Resource: w.Resource, Token: w.Token}
		_, err := br.Exec() // SAVEPOINT
		if err == nil && batch[i].idem != nil {
			_, err = br.Exec() // claim_key
		}
		if err == nil {
			err = readWrite(br, w.Operation, &res)
		}
		if err == nil {
			_, err = br.Exec() // RELEASE SAVEPOINT
		}
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			body, rerr := renderResult(res)
			outcomes[i] = writeOutcome{Reply{Status: http.StatusOK, Body: body}, rerr}
		case errors.As(err, &pgErr) && pgErr.SeverityUnlocalized != "FATAL" && pgErr.SeverityUnlocalized != "PANIC":
			return i, err, nil
		default:
			return failedAt, nil, err
		}
	}
	if err := br.Close(); err != nil {
		return failedAt, nil, err
	}
	return failedAt, nil, nil
}

func savepoint(i int) string { return "fencegw_w" + strconv.Itoa(i) }

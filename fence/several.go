// A transaction of several requests (a coalesced unit, or a group of
// units: groupcommit.go) is tried whole first: without savepoints, and, when
// none is keyed, as one implicit transaction in one round trip, as a lone
// write is (tryImplicit). If one request fails, all of it is rolled back
// and every request runs again in its own savepoint (tx.go), so that every
// answer comes from the transaction that commits. A request that fails
// among several decides for those behind it on its resources: a deadlock
// or serialization failure sends them to a retry alone after it
// (deferBehind), a row lock wait that ran out answers them as it was
// answered (failBehind).

package fence

import (
	"context"
	"errors"
	"slices"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// tryWhole runs several requests in one transaction without savepoints.
// answered: every request is answered (committed, or the transaction
// failed for good). alone: the transaction failed as a whole, rolled
// back, and its requests must be retried alone. Otherwise one request
// failed: the transaction is rolled back, and rest holds all of them,
// unanswered, to be run again in savepoints.
func (s *Store) tryWhole(ctx context.Context, conn *pgxpool.Conn, reqs []*pending) (rest []*pending, answered, alone bool) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(groupLockSQL, s.groupLockTimeout)
	for i, p := range reqs {
		if !p.unsent { // as readRound reads
			s.queueInTx(b, p.req, false, i)
		}
	}
	failed, werr, at, sessionErr := s.readRound(conn.SendBatch(ctx, b), 2, reqs, 0, false)
	switch {
	case sessionErr != nil:
		rollback(conn)
		return nil, false, true
	case failed < 0:
		return nil, true, s.commit(ctx, conn, reqs, true)
	}
	rollback(conn)
	return againWithout(reqs, failed, werr, at)
}

// groupLockSQL sets a transaction of several requests' lock_timeout,
// shorter than the session's (--write-timeout, which is also the whole
// transaction's deadline): a request whose fence row another transaction
// holds (an operator's open bypass transaction, say) fails alone, not
// found out only when the deadline ends the transaction for all of them.
const groupLockSQL = "SELECT set_config('lock_timeout', $1, true)"

// againWithout is again, except after a lock timeout: another transaction
// holds reqs[failed]'s row, which no retry in this transaction would
// change, so it is answered (unavailable, not applied), and so are the
// later requests of its resources (failBehind), which would wait for the
// same row; the others run again. answered: none is left to run.
func againWithout(reqs []*pending, failed int, err error, at failedAt) (rest []*pending, answered, alone bool) {
	if failed < 0 || !lockTimedOut(err) {
		return again(reqs), false, false
	}
	for _, p := range reqs {
		p.reset()
	}
	answerFailed(reqs[failed], err, at)
	failBehind(reqs, failed, err)
	for i, p := range reqs {
		if i != failed && !p.unsent {
			rest = append(rest, p)
		}
	}
	return rest, len(rest) == 0, false
}

// again readies every request of a first try that one request failed to
// run again, each in its savepoint. The failed request runs again too:
// its failure may have come from what the requests before it did, which
// was rolled back and is done anew, so only an answer from the
// transaction that commits is one some serial order explains.
func again(reqs []*pending) []*pending {
	for _, p := range reqs {
		p.reset()
	}
	return reqs
}

// tryImplicit runs several unkeyed requests as one implicit transaction:
// their pipelines in one batch ending in a single Sync, one round trip and
// one commit, as a lone write is. Its results are tryWhole's; a session
// lost once the batch was sent leaves every request's outcome unknown, as
// it does a lone write's. A prepared statement gone stale failed the
// batch before anything committed: it runs once more, prepared anew, as a
// lone write does (applyImplicit), rather than in savepoints through
// pgx's own statements, which may be as stale.
func (s *Store) tryImplicit(ctx context.Context, conn *pgxpool.Conn, reqs []*pending) (rest []*pending, answered, alone bool) {
	b := &pgx.Batch{}
	b.Queue(groupLockSQL, s.groupLockTimeout)
	for _, p := range reqs {
		s.queueRequest(b, p.req)
	}
	b.Queue(unscopeSQL) // read by Close, with the commit
	failed, at, err := s.implicitRound(ctx, conn, b, reqs)
	if staleStatement(err) && usable(conn) {
		failed, at, err = s.implicitRound(ctx, conn, b, reqs)
	}
	if _, _, ok := unencodable(err); ok {
		// One request's argument does not fit its column, and pgx sent
		// no Sync: nothing committed. Which request it was is not known
		// here, and the others must not share its refusal: each runs
		// alone.
		for _, p := range reqs {
			p.resp = Response{}
		}
		return nil, false, true
	}
	switch {
	case err == nil:
		return nil, true, false
	case sessionLost(err), commitWarned(err):
		for _, p := range reqs {
			p.resp = Response{}
		}
		failAll(reqs, classify(err, true, reqs[0].req, nowhere))
		return nil, true, false
	case failed < 0:
		// Refused at the commit (a deferred constraint): nothing committed.
		for _, p := range reqs {
			p.resp = Response{}
		}
		return nil, false, true
	}
	return againWithout(reqs, failed, err, at)
}

// implicitRound sends b, the implicit transaction of reqs,
// and reads their answers. It returns the index of the request that
// failed (-1 if none did) and where, and the round's first error: nil
// only if the transaction committed.
func (s *Store) implicitRound(ctx context.Context, conn *pgxpool.Conn, b *pgx.Batch, reqs []*pending) (failed int, at failedAt, err error) {
	pc := conn.Conn().PgConn()
	sent := heard(pc)
	br := s.sendBatch(ctx, conn, b)
	failed, at = -1, nowhere
	_, err = br.Exec()
	for i, p := range reqs {
		if err != nil {
			break
		}
		var results []Result
		if results, at, err = readRequest(br, p.req); err != nil {
			failed = i
			break
		}
		p.resp = answer(p.req, results)
	}
	// Closing reports the outcome of the commit itself: only a nil here
	// means the requests are durable and may be acknowledged.
	if cerr := s.closeCommit(pc, br, sent); err == nil {
		err = cerr
	}
	return failed, at, err
}

// answerOrRetry answers a request whose part of a transaction raised, or,
// in a transaction of several, marks it for a retry alone when it met
// another transaction in a deadlock or serialization failure, or one of
// pgx's prepared statements gone stale (a migration changed what it
// returns): pgx forgets the statements of a batch that failed, and the
// retry prepares them anew.
func answerOrRetry(p *pending, err error, at failedAt, several bool) {
	if several && (contended(err) || staleStatement(err)) {
		p.retry = true
		return
	}
	answerFailed(p, err, at)
}

// contended reports whether err is PostgreSQL breaking a deadlock or a
// serialization failure: a meeting with another transaction, which a
// retry may not meet again.
func contended(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == pgerrcode.DeadlockDetected || pgErr.Code == pgerrcode.SerializationFailure)
}

// deferBehind marks for a retry alone, after the commit, the requests
// behind reqs[i], which will be retried alone: they must be applied after
// it. runTx runs the retries in the order of reqs.
func deferBehind(reqs []*pending, i int) {
	for _, p := range behind(reqs, i) {
		p.retry, p.unsent = true, true
	}
}

// failBehind answers the requests behind reqs[i], whose wait for a row
// lock ran out (err), as it was: they would wait for the same row, and
// must not be applied before it.
func failBehind(reqs []*pending, i int, err error) {
	for _, p := range behind(reqs, i) {
		p.resp, p.err, p.unsent = Response{}, classify(err, false, p.req, nowhere), true
	}
}

// behind lists the requests after reqs[i], not sent yet, that share a
// resource with it or with a request listed before them: they arrived
// after it on that resource (a resource's requests are in arrival order
// in reqs).
func behind(reqs []*pending, i int) []*pending {
	held := reqs[i].req.Resources()
	var out []*pending
	for _, p := range reqs[i+1:] {
		if !p.unsent && slices.ContainsFunc(p.req.fences, func(f fence) bool { return slices.Contains(held, f.resource) }) {
			out = append(out, p)
			held = append(held, p.req.Resources()...)
		}
	}
	return out
}

// A request's pipeline, the one shape of a fenced write on the wire, and
// how its results are read back: queueRequest queues the request's fences
// in canonical order (fencegw.fence, sql/fence.sql), its deadline, then
// each write's statements; readRequest reads them and says where one
// failed. Inside an explicit transaction a request is wrapped in its
// savepoint and preceded by its key's claim (queueInTx), and a round of
// such requests is read by readRound.

package fence

import (
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/policy"
)

// fenceSQL advances one fence with ONE conditional upsert or raises FG409,
// which aborts the transaction (sql/fence.sql). The last argument starts
// the write's set of fenced resources that guard triggers check rows
// against.
const fenceSQL = "SELECT fencegw.fence($1, $2, $3, $4, $5)"

// unfencedSQL stands in for fenceSQL in unsafe mode: one result, like the
// fence, and the same stamp for the guard triggers, but no check
// (sql/stamp_unfenced.sql).
const unfencedSQL = "SELECT fencegw.stamp_unfenced($1, $2, $3, $4)"

// scopeSQL narrows the guard triggers' list, in a batch, to the resources
// of the write whose statements follow: every fence of the batch advanced
// first, but a write may touch only its own resources' rows. It narrows
// and cannot widen: a row passes only if its fence was stamped too.
const scopeSQL = "SELECT set_config('fencegw.resource', $1, true)"

// notAfterSQL refuses the request, after its fences, if the database's
// clock is past its business deadline (fence/sql/not_after.sql).
const notAfterSQL = "SELECT fencegw.not_after($1)"

// unscopeSQL ends the last request's scope before the COMMIT of a
// transaction of several requests: work deferred to the COMMIT (a deferred
// constraint trigger) cannot be told apart by request, and must not pass
// under another client's fence. A guarded row it writes is refused, and
// the requests run again alone, each under its own fences.
const unscopeSQL = "SELECT set_config('fencegw.resource', '', true)"

// queueRequest queues req's pipeline: its fences in canonical order, then
// each write's statements in the request's order. It is the one shape of a
// fenced write, alone or batched. Every statement's parameters share one
// slice, allocated once.
func (s *Store) queueRequest(b *pgx.Batch, req *Request) {
	args := make([]any, 0, req.params())
	// next queues sql with the parameters appended since start; capped,
	// so that later appends cannot touch them.
	next := func(sql string, start int) {
		queue(b, sql, args[start:len(args):len(args)]...)
	}
	for i, f := range req.fences {
		start := len(args)
		if s.unsafeNoFence {
			args = append(args, f.resource, f.token.Epoch, f.token.Revision, i == 0)
			next(unfencedSQL, start)
			continue
		}
		args = append(args, f.resource, f.token.Epoch, f.token.Revision, f.strict, i == 0)
		next(fenceSQL, start)
	}
	if !req.NotAfter.IsZero() {
		start := len(args)
		args = append(args, req.NotAfter)
		next(notAfterSQL, start)
	}
	batched := len(req.Writes) > 1
	for wi := range req.Writes {
		w := &req.Writes[wi]
		op := w.Operation
		if batched {
			start := len(args)
			args = append(args, strings.Join(w.Resources, "\n"))
			next(scopeSQL, start)
		}
		for i := range op.Statements {
			st := &op.Statements[i]
			start := len(args)
			args = op.Bind(args, st, w.Args, w.Resources, w.Tokens)
			next(st.SQL, start)
		}
	}
	if batched {
		// Work deferred to COMMIT (a deferred constraint trigger) runs
		// after the last write, and cannot be told apart by write: it is
		// judged under every fence of the request, all of which its client
		// holds, not under the last write's alone.
		start := len(args)
		args = append(args, strings.Join(req.Resources(), "\n"))
		next(scopeSQL, start)
	}
}

// params is how many parameters queueRequest binds for r: five per
// fence, one per write's scope when there are several and one for the
// scope after them, and its statements'.
func (r *Request) params() int {
	n := 5*len(r.fences) + 1 // the deadline's, when there is one
	if len(r.Writes) > 1 {
		n++
	}
	for wi := range r.Writes {
		if len(r.Writes) > 1 {
			n++
		}
		for i := range r.Writes[wi].Operation.Statements {
			n += len(r.Writes[wi].Operation.Statements[i].Params())
		}
	}
	return n
}

// readRequest reads the results of a pipeline queued by queueRequest. On
// failure it says where: which fence or which write raised.
func readRequest(br batchResults, req *Request) ([]Result, failedAt, error) {
	for i := range req.fences {
		if _, err := br.Exec(); err != nil {
			return nil, failedAt{fence: i, write: -1}, err
		}
	}
	if !req.NotAfter.IsZero() {
		if _, err := br.Exec(); err != nil {
			return nil, nowhere, err
		}
	}
	results := req.result[:]
	batched := len(req.Writes) > 1
	if batched {
		results = make([]Result, len(req.Writes))
	}
	for wi := range req.Writes {
		if batched {
			if _, err := br.Exec(); err != nil {
				return nil, failedAt{fence: -1, write: wi}, err
			}
		}
		op := req.Writes[wi].Operation
		var res []StatementResult
		if batched || len(op.Statements) > len(req.statements) {
			res = make([]StatementResult, len(op.Statements))
		} else {
			res = req.statements[:len(op.Statements)]
			clear(res)
		}
		results[wi].Statements = res
		for i := range op.Statements {
			if err := readStatement(br, op.Statements[i].Kind, &res[i]); err != nil {
				return nil, failedAt{fence: -1, write: wi}, err
			}
		}
	}
	if batched {
		if _, err := br.Exec(); err != nil {
			return nil, nowhere, err
		}
	}
	return results, nowhere, nil
}

func readStatement(br batchResults, kind policy.StatementKind, out *StatementResult) error {
	switch kind {
	case policy.Counted:
		return br.QueryRow().Scan(&out.RowsAffected)
	case policy.Rows:
		// Into []byte, not json.RawMessage: pgx would run the latter
		// through json.Unmarshal, and PostgreSQL made it.
		return br.QueryRow().Scan(&out.RowsAffected, &out.Rows)
	}
	tag, err := br.Exec()
	out.RowsAffected = tag.RowsAffected()
	return err
}

// queue is pgx's Batch.Queue, reusing a QueuedQuery left in b's backing
// array by recycle.
func queue(b *pgx.Batch, sql string, args ...any) {
	n := len(b.QueuedQueries)
	if n < cap(b.QueuedQueries) {
		if qq := b.QueuedQueries[:n+1][n]; qq != nil {
			*qq = pgx.QueuedQuery{SQL: sql, Arguments: args}
			b.QueuedQueries = b.QueuedQueries[:n+1]
			return
		}
	}
	b.QueuedQueries = append(b.QueuedQueries, &pgx.QueuedQuery{SQL: sql, Arguments: args})
}

// queueInTx queues one request of a transaction: in its savepoint when
// there are several, its key claimed first when it has one.
func (s *Store) queueInTx(b *pgx.Batch, req *Request, savepoints bool, i int) {
	if savepoints {
		b.Queue("SAVEPOINT " + savepoint(i))
	}
	if k := req.IdempotencyKey; k != nil {
		b.Queue(claimSQL, k.Client, k.Scope, k.Value, k.Fingerprint[:], k.Retention)
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
func (s *Store) readRound(br pgx.BatchResults, preamble int, reqs []*pending, next int, savepoints bool) (failed int, werr error, at failedAt, sessionErr error) {
	defer br.Close()
	for range preamble { // BEGIN, and a group's lock_timeout
		if _, err := br.Exec(); err != nil {
			return -1, nil, nowhere, err
		}
	}
	for i := next; i < len(reqs); i++ {
		p := reqs[i]
		if p.unsent {
			continue
		}
		var err error
		if savepoints {
			_, err = br.Exec()
		}
		if err == nil && p.req.IdempotencyKey != nil {
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
			p.resp, p.err = answer(p.req, results), nil
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

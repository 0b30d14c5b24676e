// The group-commit rule: which writes share a transaction, and how one
// transaction answers them all.
//
//   - A unit is one resource's work that must commit before the resource's
//     next: a lone write that found its resource idle, or the writes that
//     queued behind its previous unit (coalescing, coalesce.go). A
//     resource has at most one unit in flight.
//   - A transaction takes the unit at the head of the committer's line
//     and, with group commit on, every unit behind it up to maxGroup
//     requests, stopping at the first unit whose resource says group_commit:
//     false (take). Nothing waits for a group to fill: a group is what
//     queued while the previous transaction was in flight.
//   - Its units run in canonical order (by resource), so fence rows are
//     locked in one order by every transaction; a unit's writes keep their
//     arrival order.
//   - The transaction is tried whole first; once one request has failed,
//     every request runs again in its own savepoint (several.go); no write is answered before the one COMMIT; a write
//     that met another transaction in a deadlock or serialization failure,
//     and those behind it on its resources, run again alone after it; a
//     lost COMMIT has the refusals decided inside it decided again alone;
//     work deferred to the COMMIT is judged under no write's fence, and a
//     guarded row it writes sends every write to run alone.

package fence

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"

	"github.com/jackc/pgx/v5/pgxpool"
)

// maxGroup bounds the requests of one transaction (a lone write or a
// batch each), a group of units or one hot resource's unit: every fence
// row in it stays locked until its COMMIT, so a bigger group trades
// latency for throughput. Each request may need a savepoint of its own,
// so it stays below PostgreSQL's per-transaction cache of 64
// subtransactions, beyond which every snapshot on the server gets slower.
const maxGroup = 32

// maxStickyRounds bounds how many transactions in a row a runner keeps its
// connection for. Keeping it spares the units in line a wait in the
// pool's queue; giving it back now and then lets the pool's other users
// (transfers, batches, the audit, the janitor) have a turn.
const maxStickyRounds = 8

// groupTransactions is how many transactions of coalescing resources may
// be in flight at once with group commit, unless configured; see spillAfter
// for when more than one is.
func groupTransactions() int { return max(2, runtime.GOMAXPROCS(0)) }

// unit is work for one resource that must commit before the resource's
// next: a request that found its resource idle, or the requests that
// queued behind the resource's previous unit.
type unit struct {
	resource string
	requests []*pending
	// alone: never merged with other units (group commit is off for its
	// resource).
	alone bool
	// ctx, if set, is the caller's of a request that found its resource
	// idle: once it is done, the request is answered unavailable, not
	// run, as it would have been had it waited for the pool.
	ctx context.Context
	// coal is told once every request of the unit is answered: it hands
	// the resource its next unit, or marks it idle (handOn).
	coal *coalescer
}

// run applies units as one transaction on conn, or on a connection from
// the pool if conn is nil or unfit, answers every request in them and
// hands each unit's resource on; it returns the connection it holds
// afterwards, if any. A panic becomes every request's error instead of
// leaving callers waiting and resources busy.
func (c *committer) run(ctx context.Context, conn *pgxpool.Conn, units []*unit) (held *pgxpool.Conn) {
	all, inTx := gather(units)
	defer func() {
		if p := recover(); p != nil {
			if held != nil {
				held.Release() // the pool closes it if it is mid-anything
			}
			held = nil
			for _, pd := range inTx {
				pd.resp, pd.err = Response{}, fmt.Errorf("fence: transaction of %d writes panicked: %v", len(inTx), p)
			}
		}
		for _, pd := range all {
			pd.answered.Done()
		}
		for _, u := range units {
			u.coal.handOn(u.resource)
		}
	}()
	if len(inTx) == 0 {
		return conn
	}
	held, err := c.store.readyConn(ctx, conn)
	if err != nil {
		for _, pd := range inTx {
			pd.err = err
		}
		return nil
	}
	if c.onTransaction != nil {
		c.onTransaction(len(inTx))
	}
	if len(inTx) == 1 && inTx[0].req.IdempotencyKey == nil {
		inTx[0].resp, inTx[0].err = c.store.applyImplicit(ctx, held, inTx[0].req)
		return held
	}
	held = c.store.runTx(ctx, held, inTx)
	c.store.answerReplays(ctx, held, inTx)
	return held
}

// gather returns the requests of units, and those of them still to run:
// a unit whose caller gave up before it could start is answered
// unavailable instead, as it would have been had it waited for the pool.
// One unit's requests are used as they are, so a lone write copies none.
func gather(units []*unit) (all, inTx []*pending) {
	if len(units) == 1 {
		if giveUp(units[0]) {
			return units[0].requests, nil
		}
		return units[0].requests, units[0].requests
	}
	for _, u := range units {
		all = append(all, u.requests...)
		if !giveUp(u) {
			inTx = append(inTx, u.requests...)
		}
	}
	return all, inTx
}

// giveUp answers u's requests unavailable, and reports true, if u's
// caller gave up waiting for a connection.
func giveUp(u *unit) bool {
	if u.ctx == nil || u.ctx.Err() == nil {
		return false
	}
	for _, p := range u.requests {
		p.err = fmt.Errorf("%w: no PostgreSQL connection in time, nothing was written: %w", ErrUnavailable, u.ctx.Err())
	}
	return true
}

// take removes from the head of the line the units of one transaction:
// one, or with group commit as many as fit in maxGroup requests, in
// canonical order. c.mu is held.
func (c *committer) take() []*unit {
	units, n := []*unit{c.queue[0]}, len(c.queue[0].requests)
	i := 1
	for ; !units[0].alone && i < len(c.queue); i++ {
		u := c.queue[i]
		if u.alone || n+len(u.requests) > maxGroup {
			break
		}
		units, n = append(units, u), n+len(u.requests)
	}
	c.queue[0] = nil
	c.queue = c.queue[i:]
	if len(c.queue) == 0 {
		c.queue = nil // let the backing array go
	}
	slices.SortFunc(units, func(a, b *unit) int { return cmp.Compare(a.resource, b.resource) })
	return units
}

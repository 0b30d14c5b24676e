package fence

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// maxGroup bounds the writes of one transaction, a group of units or one
// hot resource's batch: every fence row in it stays locked until its
// COMMIT, so a bigger group trades latency for throughput. It stays below
// PostgreSQL's per-transaction cache of 64 subtransactions, beyond which
// every snapshot on the server gets slower.
const maxGroup = 32

// maxStickyRounds bounds how many transactions in a row a runner keeps its
// connection for. Keeping it spares the units in line a wait in the
// pool's queue; giving it back now and then lets the pool's other users
// (transfers, batches, the audit, the janitor) have a turn.
const maxStickyRounds = 8

// groupTransactions is how many transactions of coalescing resources are
// in flight at once with group commit, unless configured: fewer and larger
// groups commit more writes per flush and keep PostgreSQL's backends from
// contending for the CPU (BENCHMARKS.md: the sweep).
func groupTransactions() int { return max(2, runtime.GOMAXPROCS(0)) }

// unit is work for one resource that must commit before the resource's
// next: a request that found its resource idle, or the requests that
// queued behind the resource's previous unit.
type unit struct {
	resource string
	batch    []*pending
	// alone: never merged with other units (group commit is off for its
	// resource).
	alone bool
	// ctx, if set, is the caller's of a request that found its resource
	// idle: once it is done, the request is answered unavailable, not
	// run, as it would have been had it waited for the pool.
	ctx context.Context
	// then runs once every request of the unit is answered: it hands the
	// resource its next unit, or marks it idle.
	then func()
}

// committer runs units on the store's connections, at most slots
// transactions at once. A unit that finds a slot free runs at once; one
// that finds none waits in line, and a runner that finishes a transaction
// takes the units in line as its next transaction: with group commit, all
// of them (up to maxGroup writes) under one COMMIT, each write in its own
// savepoint, so one commit makes many writes of many resources durable.
// Nothing waits for a group to fill: a group is what queued while the
// previous transaction was in flight.
type committer struct {
	store   *Store
	timeout time.Duration // bounds a transaction of units in line
	onBatch func(size int)

	mu    sync.Mutex
	free  int // slots not taken
	queue []*unit
}

func newCommitter(s *Store, slots int, timeout time.Duration, onBatch func(int)) *committer {
	return &committer{store: s, timeout: timeout, onBatch: onBatch, free: max(slots, 1)}
}

// runInline runs u on the caller's goroutine, bounded by ctx, if a slot
// is free, and reports whether it did; otherwise u waits in line and its
// requests are answered by a runner.
func (c *committer) runInline(ctx context.Context, u *unit) bool {
	c.mu.Lock()
	if c.free == 0 {
		c.queue = append(c.queue, u)
		c.mu.Unlock()
		return false
	}
	c.free--
	c.mu.Unlock()

	var conn *pgxpool.Conn
	// Whatever happens, a panic included, the slot and the connection
	// go on to the units in line.
	defer func() { c.finish(conn) }()
	conn = c.run(ctx, nil, []*unit{u})
	return true
}

// enqueue runs u at once on a runner of its own if a slot is free, else
// puts it in line. It never runs u on the caller's goroutine.
func (c *committer) enqueue(u *unit) {
	c.mu.Lock()
	if c.free == 0 {
		c.queue = append(c.queue, u)
		c.mu.Unlock()
		return
	}
	c.free--
	c.mu.Unlock()
	go c.loop(nil, []*unit{u})
}

// finish ends an inline run: the units in line, if any, get its slot and
// connection on a runner; else the slot is freed.
func (c *committer) finish(conn *pgxpool.Conn) {
	if units := c.next(conn); units != nil {
		go c.loop(conn, units)
	}
}

// next takes the next transaction's units from the line, or frees the
// slot (and gives conn back to the pool) when the line is empty.
func (c *committer) next(conn *pgxpool.Conn) []*unit {
	c.mu.Lock()
	if len(c.queue) == 0 {
		c.free++
		c.mu.Unlock()
		if conn != nil {
			conn.Release()
		}
		return nil
	}
	units := c.take()
	c.mu.Unlock()
	return units
}

// take removes from the head of the line the units of one transaction:
// one, or with group commit as many as fit in maxGroup writes, in
// canonical order. c.mu is held.
func (c *committer) take() []*unit {
	units, n := []*unit{c.queue[0]}, len(c.queue[0].batch)
	i := 1
	for ; !units[0].alone && i < len(c.queue); i++ {
		u := c.queue[i]
		if u.alone || n+len(u.batch) > maxGroup {
			break
		}
		units, n = append(units, u), n+len(u.batch)
	}
	c.queue[0] = nil
	c.queue = c.queue[i:]
	if len(c.queue) == 0 {
		c.queue = nil // let the backing array go
	}
	slices.SortFunc(units, func(a, b *unit) int { return cmp.Compare(a.resource, b.resource) })
	return units
}

// loop is a runner: it runs units on conn (or on a connection from the
// pool), then whatever is in line, until the line is empty.
func (c *committer) loop(conn *pgxpool.Conn, units []*unit) {
	for round := 1; units != nil; round++ {
		if conn != nil && round%maxStickyRounds == 0 {
			conn.Release() // to the back of the pool's queue, like everyone
			conn = nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		conn = c.run(ctx, conn, units)
		cancel()
		units = c.next(conn)
	}
}

// run applies units as one transaction on conn, or on a connection from
// the pool if conn is nil or unfit, answers every request in them and
// hands each unit's resource on; it returns the connection it holds
// afterwards, if any. A panic becomes every request's error instead of
// leaving callers waiting and resources busy.
func (c *committer) run(ctx context.Context, conn *pgxpool.Conn, units []*unit) (held *pgxpool.Conn) {
	var all, batch []*pending
	for _, u := range units {
		all = append(all, u.batch...)
		if u.ctx != nil && u.ctx.Err() != nil {
			for _, p := range u.batch {
				p.err = fmt.Errorf("%w: no PostgreSQL connection in time, nothing was written: %w", ErrUnavailable, u.ctx.Err())
			}
			continue
		}
		batch = append(batch, u.batch...)
	}
	defer func() {
		if p := recover(); p != nil {
			if held != nil {
				held.Release() // the pool closes it if it is mid-anything
			}
			held = nil
			for _, pd := range batch {
				pd.resp, pd.err = Response{}, fmt.Errorf("fence: transaction of %d writes panicked: %v", len(batch), p)
			}
		}
		for _, pd := range all {
			close(pd.done)
		}
		for _, u := range units {
			u.then()
		}
	}()
	if len(batch) == 0 {
		return conn
	}
	held, err := c.store.readyConn(ctx, conn)
	if err != nil {
		for _, pd := range batch {
			pd.err = err
		}
		return nil
	}
	if c.onBatch != nil {
		c.onBatch(len(batch))
	}
	if len(batch) == 1 && batch[0].req.Key == nil {
		batch[0].resp, batch[0].err = c.store.applyImplicit(ctx, held, batch[0].req)
		return held
	}
	held = c.store.runTx(ctx, held, batch)
	c.store.answerReplays(ctx, held, batch)
	return held
}

// WaitingForConnection is how many requests wait in line for a
// connection slot (each resource's first; those behind it are Queued).
func (s *Store) WaitingForConnection() int {
	c := s.coal.com
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, u := range c.queue {
		n += len(u.batch)
	}
	return n
}

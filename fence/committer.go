// The committer's lanes: at most so many transactions in flight. A unit
// that finds a lane free runs at once, on its caller's goroutine or a
// runner's; the others wait in line, and the runner that finishes a
// transaction takes the line as its next (groupcommit.go: take, run).

package fence

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/internal/timeout"
)

// spillAfter is how long the line of a group-committing store waits for
// its one transaction in flight before another starts beside it. One at a
// time makes the largest groups: the most writes per flush and the least
// CPU per write, which on a CPU-bound machine is what sets throughput
// (docs/benchmarks-history.md: the sweep). But one write stuck on a row lock (an
// operator's open bypass transaction, say) would hold the whole line until
// its --write-timeout; so when no transaction has ended for spillAfter,
// another starts, up to the store's bound. It is far above a commit's
// flush on a disk that keeps up, and short enough that a stuck write
// delays the others no more than a slow flush would.
const spillAfter = 20 * time.Millisecond

// committer runs units on the store's connections in lanes, a lane being
// one connection's transactions one after another: at most lanes
// transactions at once. A unit that may start (see mayStart) runs at once;
// one that may not waits in line, and a runner that finishes a transaction
// takes the units in line as its next transaction: with group commit, all
// of them (up to maxGroup requests) under one COMMIT, tried whole first and
// each request in its own savepoint only once one has failed (several.go),
// so one commit makes many writes of many resources durable.
// Nothing waits for a group to fill: a group is what queued while the
// previous transaction was in flight.
type committer struct {
	store *Store
	// deadlines bound a transaction of units in line: the transactions
	// that start together share one deadline, which pgx need not watch
	// (boundByConn).
	deadlines     *timeout.Shared
	onTransaction func(size int)
	// steady is how many transactions start without waiting: all lanes,
	// or with group commit one; past it, another starts only when the
	// line has not moved for spillAfter.
	steady int
	// spillAfter is the constant spillAfter; tests change it
	// (export_test.go) to make a spill certain or impossible.
	spillAfter time.Duration

	mu       sync.Mutex
	busy     []bool      // per lane: a runner holds it
	started  []time.Time // per lane: when its transaction started; zero between
	running  int         // lanes held
	progress time.Time   // when a transaction last started or ended
	spill    *time.Timer
	armed    bool // spill will look at the line
	queue    []*unit
}

func newCommitter(s *Store, lanes, steady int, ttl time.Duration, onTransaction func(int)) *committer {
	lanes = max(lanes, 1)
	return &committer{
		store: s, deadlines: timeout.New(ttl), onTransaction: onTransaction, steady: min(max(steady, 1), lanes),
		busy: make([]bool, lanes), started: make([]time.Time, lanes), spillAfter: spillAfter,
	}
}

// mayStart reports whether a transaction may start now: fewer than steady
// are in flight, or a lane is free and no transaction started or ended
// for spillAfter. c.mu is held.
func (c *committer) mayStart(now time.Time) bool {
	return c.running < c.steady || (c.running < len(c.busy) && now.Sub(c.progress) >= c.spillAfter)
}

// hold takes a free lane for a transaction starting now. c.mu is held and
// mayStart was true.
func (c *committer) hold(now time.Time) int {
	lane := slices.Index(c.busy, false)
	c.busy[lane], c.started[lane] = true, now
	c.running++
	c.progress = now
	return lane
}

// admit takes a lane for u if a transaction may start, else puts u in
// line; ok says which. Beyond steady, a unit never starts ahead of units
// already in line: it joins the line, and if the line may spill, the
// spill takes it from the head. c.mu is held.
func (c *committer) admit(u *unit) (lane int, ok bool) {
	now := time.Now()
	if c.running < c.steady || (len(c.queue) == 0 && c.mayStart(now)) {
		return c.hold(now), true
	}
	c.queue = append(c.queue, u)
	if c.mayStart(now) {
		c.spillNow(now)
	} else {
		c.armSpill(now)
	}
	return 0, false
}

// armSpill makes sure the line is looked at again once it has not moved
// for spillAfter, if another transaction could start then. c.mu is held.
func (c *committer) armSpill(now time.Time) {
	if c.armed || c.running >= len(c.busy) {
		return
	}
	c.armed = true
	d := c.spillAfter - now.Sub(c.progress)
	if c.spill == nil {
		c.spill = time.AfterFunc(d, c.spillLine)
		return
	}
	c.spill.Reset(d)
}

// spillLine starts a runner for the units in line if the line has not
// moved for spillAfter: the transactions in flight are stuck or slow.
func (c *committer) spillLine() {
	c.mu.Lock()
	c.armed = false
	if len(c.queue) == 0 {
		c.mu.Unlock()
		return
	}
	now := time.Now()
	if c.mayStart(now) {
		c.spillNow(now)
	} else {
		c.armSpill(now) // it moved meanwhile: look again later
	}
	c.mu.Unlock()
}

// spillNow starts a runner for the head of the line in a lane of its own.
// c.mu is held, the line is not empty and mayStart was true.
func (c *committer) spillNow(now time.Time) {
	lane := c.hold(now)
	units := c.take()
	if len(c.queue) > 0 {
		c.armSpill(now)
	}
	go c.loop(nil, lane, units)
}

// runInline runs u on the caller's goroutine, bounded by ctx, if a
// transaction may start, and reports whether it did; otherwise u waits in
// line and its requests are answered by a runner.
func (c *committer) runInline(ctx context.Context, u *unit) bool {
	c.mu.Lock()
	lane, ok := c.admit(u)
	c.mu.Unlock()
	if !ok {
		return false
	}
	var conn *pgxpool.Conn
	// Whatever happens, a panic included, the lane and the connection
	// go on to the units in line.
	defer func() {
		if units := c.next(conn, lane); units != nil {
			go c.loop(conn, lane, units)
		}
	}()
	conn = c.run(ctx, nil, []*unit{u})
	return true
}

// enqueue runs u at once on a runner of its own if a transaction may
// start, else puts it in line. It never runs u on the caller's goroutine.
func (c *committer) enqueue(u *unit) {
	c.mu.Lock()
	lane, ok := c.admit(u)
	c.mu.Unlock()
	if ok {
		go c.loop(nil, lane, []*unit{u})
	}
}

// WaitingForConnection is how many requests wait in the committer's line
// for one of the pool's connections (with group commit, the next group):
// fencegw_writes_waiting_for_connection. Those queued behind their
// resource's unit are Queued.
func (s *Store) WaitingForConnection() int {
	c := s.coal.com
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, u := range c.queue {
		n += len(u.requests)
	}
	return n
}

// loop is a runner: it runs units on conn (or on a connection from the
// pool), then whatever is in line, until next lets its lane go.
func (c *committer) loop(conn *pgxpool.Conn, lane int, units []*unit) {
	for round := 1; units != nil; round++ {
		if conn != nil && round%maxStickyRounds == 0 {
			conn.Release() // to the back of the pool's queue, like everyone
			conn = nil
		}
		conn = c.run(c.deadlines.Context(), conn, units)
		units = c.next(conn, lane)
	}
}

// next is called when lane's transaction has ended: it takes the next
// transaction's units from the line, or lets the lane go (and gives conn
// back to the pool) when the line is empty, or when the lane is one past
// steady and no other transaction is stuck: the others move the line, in
// fewer and larger groups.
func (c *committer) next(conn *pgxpool.Conn, lane int) []*unit {
	c.mu.Lock()
	now := time.Now()
	c.progress = now
	c.started[lane] = time.Time{}
	if len(c.queue) == 0 || (c.running > c.steady && !c.stuck(now)) {
		c.busy[lane] = false
		c.running--
		if len(c.queue) > 0 {
			c.armSpill(now)
		}
		c.mu.Unlock()
		if conn != nil {
			conn.Release()
		}
		return nil
	}
	c.started[lane] = now
	units := c.take()
	c.mu.Unlock()
	return units
}

// stuck reports whether a transaction in flight started spillAfter ago or
// more. c.mu is held.
func (c *committer) stuck(now time.Time) bool {
	for _, t := range c.started {
		if !t.IsZero() && now.Sub(t) >= c.spillAfter {
			return true
		}
	}
	return false
}

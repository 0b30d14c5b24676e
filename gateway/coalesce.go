package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// maxCoalesced bounds one coalesced transaction: the fence row stays locked
// for all of it, so a bigger batch trades latency for throughput. It stays
// below PostgreSQL's per-transaction cache of 64 subtransactions, beyond
// which every snapshot on the server gets slower.
const maxCoalesced = 32

// coalescer runs the writes of a hot resource together. A write that finds
// another of its resource in flight is queued; a drainer per busy resource
// takes everything queued, in arrival order, and applies it in one
// transaction (see executeBatch), so PostgreSQL commits once per batch
// instead of once per write. Each write stays atomic in its own savepoint,
// serial order is arrival order, and no write is answered before the
// commit that makes it durable.
type coalescer struct {
	exec    *Executor
	timeout time.Duration
	onBatch func(size int)

	mu     sync.Mutex
	queues map[string]*writeQueue // busy resources; nil: one write in flight, none queued
}

type writeQueue struct {
	waiting []*queuedWrite
}

type queuedWrite struct {
	w    Write
	idem *Idempotency      // nil for a write without Idempotency-Key
	done chan writeOutcome // buffered: the drainer never blocks on it
}

// writeOutcome is what a queued write's caller gets: the reply (a keyed
// write's may be a replay) or the error.
type writeOutcome struct {
	reply Reply
	err   error
}

func newCoalescer(exec *Executor, timeout time.Duration, onBatch func(int)) *coalescer {
	return &coalescer{exec: exec, timeout: timeout, onBatch: onBatch, queues: map[string]*writeQueue{}}
}

// Execute applies w, alone or with the writes queued beside it; idem, if
// not nil, makes it execute at most once like Executor.ExecuteOnce. A write
// that finds its resource idle runs at once on the caller's goroutine,
// bounded by ctx, exactly as without coalescing; writes arriving meanwhile
// queue behind it and are drained in batches once it is done. A queued
// write waits for its outcome even past ctx: once queued, it will be
// attempted, and its caller must not be told anything before it is.
func (c *coalescer) Execute(ctx context.Context, w Write, idem *Idempotency) (Reply, error) {
	c.mu.Lock()
	if q, busy := c.queues[w.Resource]; busy {
		if q == nil { // the first to queue behind the write in flight
			q = &writeQueue{}
			c.queues[w.Resource] = q
		}
		qw := &queuedWrite{w: w, idem: idem, done: make(chan writeOutcome, 1)}
		q.waiting = append(q.waiting, qw)
		c.mu.Unlock()
		out := <-qw.done
		return out.reply, out.err
	}
	c.queues[w.Resource] = nil // busy, nobody waiting: no queue allocated
	c.mu.Unlock()

	// Whatever happens to this write, even a panic, the writes that
	// queued behind it are handed on, with the connection.
	var conn *pgxpool.Conn
	defer func() { c.handOff(w.Resource, conn) }()
	conn, err := c.exec.acquire(ctx)
	if err != nil {
		return Reply{}, err
	}
	return c.exec.applyOn(ctx, conn, w, idem)
}

// maxStickyBatches bounds how many uses in a row a connection gets from a
// resource's writes: the write that hands it over, then batches. Keeping
// it spares the writes queued behind a busy resource a second wait in the
// pool's queue; giving it back now and then keeps a few hot resources from
// starving all the others of connections.
const maxStickyBatches = 8

// handOff ends a lone write: if writes queued behind it, a drainer takes
// them and the connection (nil if there is none); if not, the resource is
// idle again and the connection goes back to the pool.
func (c *coalescer) handOff(resource string, conn *pgxpool.Conn) {
	c.mu.Lock()
	q := c.queues[resource]
	if q == nil || len(q.waiting) == 0 {
		c.unlockIdle(resource, conn)
		return
	}
	c.mu.Unlock()
	// The drainer ends when the queue is empty; every queued write's
	// caller waits for it, so it cannot outlive the requests it serves.
	go c.drain(resource, q, conn)
}

// unlockIdle marks resource idle, releases c.mu (which the caller holds)
// and gives conn, if any, back to the pool.
func (c *coalescer) unlockIdle(resource string, conn *pgxpool.Conn) {
	delete(c.queues, resource)
	c.mu.Unlock()
	if conn != nil {
		conn.Release()
	}
}

func (c *coalescer) drain(resource string, q *writeQueue, conn *pgxpool.Conn) {
	for sticky := 0; ; sticky++ {
		c.mu.Lock()
		n := min(len(q.waiting), maxCoalesced)
		if n == 0 {
			c.unlockIdle(resource, conn)
			return
		}
		batch := q.waiting[:n:n]
		q.waiting = q.waiting[n:]
		c.mu.Unlock()

		if conn != nil && sticky%maxStickyBatches == maxStickyBatches-1 {
			conn.Release() // to the back of the pool's queue, like everyone
			conn = nil
		}
		conn = c.run(batch, conn)
		if c.onBatch != nil {
			c.onBatch(n)
		}
	}
}

// run applies one batch on conn, or on a connection from the pool if conn
// is nil or unfit to carry on (broken, or left inside a transaction), and
// returns the connection it holds afterwards, if any. A panic is turned
// into an error for the batch's callers instead of taking the process
// down: the handlers' recoverer does not reach this goroutine.
func (c *coalescer) run(batch []*queuedWrite, conn *pgxpool.Conn) (held *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			if held != nil {
				held.Release() // the pool closes it if it is mid-anything
			}
			held = nil
			err := fmt.Errorf("gateway: coalesced batch panicked: %v", p)
			for _, qw := range batch {
				select {
				case qw.done <- writeOutcome{err: err}:
				default: // already answered
				}
			}
		}
	}()
	held, err := c.exec.readyConn(ctx, conn)
	if err != nil {
		for _, qw := range batch {
			qw.done <- writeOutcome{err: err}
		}
		return nil
	}
	if len(batch) == 1 {
		batch[0].done <- c.exec.executeOne(ctx, held, batch[0])
		return held
	}
	held = c.exec.executeBatch(ctx, held, batch)
	return held
}

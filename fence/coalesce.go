package fence

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

// maxStickyBatches bounds how many uses in a row a connection gets from a
// resource's requests: the request that hands it over, then batches.
// Keeping it spares the requests queued behind a busy resource a second
// wait in the pool's queue; giving it back now and then keeps a few hot
// resources from starving all the others of connections.
const maxStickyBatches = 8

// coalescer runs the requests of a hot resource together. A request that
// finds another of its resource in flight is queued; a drainer per busy
// resource takes everything queued, in arrival order, and applies it in
// one transaction (runTx), so PostgreSQL commits once per batch instead of
// once per request. Each request stays atomic in its own savepoint, serial
// order is arrival order, and no request is answered before the commit
// that makes it durable.
type coalescer struct {
	store   *Store
	timeout time.Duration
	onBatch func(size int)

	mu     sync.Mutex
	queues map[string]*requestQueue // busy resources; nil: one request in flight, none queued
}

type requestQueue struct {
	waiting []*pending
}

func newCoalescer(s *Store, timeout time.Duration, onBatch func(int)) *coalescer {
	return &coalescer{store: s, timeout: timeout, onBatch: onBatch, queues: map[string]*requestQueue{}}
}

// apply applies a coalescable request: at once on the caller's goroutine,
// bounded by ctx, if its resource is idle, exactly as without coalescing;
// else queued behind the request in flight.
func (c *coalescer) apply(ctx context.Context, req *Request) (Response, error) {
	resource := req.fences[0].resource
	c.mu.Lock()
	if q, busy := c.queues[resource]; busy {
		if q == nil { // the first to queue behind the request in flight
			q = &requestQueue{}
			c.queues[resource] = q
		}
		p := &pending{req: req, done: make(chan struct{})}
		q.waiting = append(q.waiting, p)
		c.mu.Unlock()
		<-p.done
		return p.resp, p.err
	}
	c.queues[resource] = nil // busy, nobody waiting: no queue allocated
	c.mu.Unlock()

	// Whatever happens to this request, even a panic, the requests that
	// queued behind it are handed on, with the connection.
	var conn *pgxpool.Conn
	defer func() { c.handOff(resource, conn) }()
	conn, err := c.store.acquire(ctx)
	if err != nil {
		return Response{}, err
	}
	return c.store.applyOn(ctx, conn, req)
}

// Queued is how many requests of resource wait behind the one in flight.
func (s *Store) Queued(resource string) int {
	s.coal.mu.Lock()
	defer s.coal.mu.Unlock()
	if q := s.coal.queues[resource]; q != nil {
		return len(q.waiting)
	}
	return 0
}

// handOff ends a lone request: if requests queued behind it, a drainer
// takes them and the connection (nil if there is none); if not, the
// resource is idle again and the connection goes back to the pool.
func (c *coalescer) handOff(resource string, conn *pgxpool.Conn) {
	c.mu.Lock()
	q := c.queues[resource]
	if q == nil || len(q.waiting) == 0 {
		c.unlockIdle(resource, conn)
		return
	}
	c.mu.Unlock()
	// The drainer ends when the queue is empty; every queued request's
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

func (c *coalescer) drain(resource string, q *requestQueue, conn *pgxpool.Conn) {
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
// returns the connection it holds afterwards, if any. Every request of the
// batch is answered, a panic included: it becomes an error for the
// batch's callers instead of taking the process down (the handlers'
// recoverer does not reach this goroutine).
func (c *coalescer) run(batch []*pending, conn *pgxpool.Conn) (held *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			if held != nil {
				held.Release() // the pool closes it if it is mid-anything
			}
			held = nil
			for _, pd := range batch {
				pd.resp, pd.err = Response{}, fmt.Errorf("fence: coalesced batch panicked: %v", p)
			}
		}
		for _, pd := range batch {
			close(pd.done)
		}
	}()
	held, err := c.store.readyConn(ctx, conn)
	if err != nil {
		for _, pd := range batch {
			pd.err = err
		}
		return nil
	}
	if len(batch) == 1 && batch[0].req.Key == nil {
		batch[0].resp, batch[0].err = c.store.applyImplicit(ctx, held, batch[0].req)
		return held
	}
	held = c.store.runTx(ctx, held, batch)
	c.store.answerReplays(ctx, held, batch)
	return held
}

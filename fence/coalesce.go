// Coalescing, where a write of a coalescing resource goes first: a request
// that finds its resource idle is a unit of its own; one that finds a unit
// of its resource in flight waits behind it, and what waited becomes the
// resource's next unit once that one is answered. The committer runs the
// units (committer.go).

package fence

import (
	"context"
	"sync"
)

// coalescer runs the requests of a busy resource together. A request that
// finds another of its resource in flight is queued; when the resource's
// unit in flight commits, everything queued meanwhile becomes the
// resource's next unit (up to maxGroup requests), which the committer
// runs as one transaction, or within a group of units of other resources.
// So PostgreSQL commits once per group instead of once per request. Each
// request stays atomic (the transaction is tried whole first, and once
// one request has failed each runs again in its own savepoint:
// several.go), serial order is arrival order, a resource has at most one
// unit in flight, and no request is answered before the commit that
// makes it durable.
type coalescer struct {
	com *committer

	mu     sync.Mutex
	queues map[string]*requestQueue // busy resources; nil: one unit in flight, none queued
}

type requestQueue struct {
	waiting []*pending
}

func newCoalescer(com *committer) *coalescer {
	return &coalescer{com: com, queues: map[string]*requestQueue{}}
}

// apply applies a coalescable request: at once on the caller's goroutine,
// bounded by ctx, if its resource is idle and a lane is free,
// exactly as without coalescing; else queued, behind the resource's unit
// in flight or in the committer's line.
func (c *coalescer) apply(ctx context.Context, req *Request) (Response, error) {
	resource := req.fences[0].resource
	// The request, its unit and the unit's requests, should it find its
	// resource idle, in one allocation: this runs on every write.
	a := &struct {
		p        pending
		u        unit
		requests [1]*pending
	}{p: pending{req: req}}
	p := &a.p
	p.answered.Add(1)
	c.mu.Lock()
	if q, busy := c.queues[resource]; busy {
		if q == nil { // the first to queue behind the unit in flight
			q = &requestQueue{}
			c.queues[resource] = q
		}
		q.waiting = append(q.waiting, p)
		c.mu.Unlock()
		p.answered.Wait()
		return p.resp, p.err
	}
	c.queues[resource] = nil // busy, nobody waiting: no queue allocated
	c.mu.Unlock()

	a.requests[0] = p
	a.u = c.unit(resource, a.requests[:])
	a.u.ctx = ctx
	if !c.com.runInline(ctx, &a.u) {
		p.answered.Wait()
	}
	return p.resp, p.err
}

// unit makes requests a unit of resource, to be in flight next.
func (c *coalescer) unit(resource string, requests []*pending) unit {
	return unit{
		resource: resource, requests: requests,
		alone: !requests[0].req.groupCommits(c.com.store.groupCommit),
		coal:  c,
	}
}

// handOn follows a unit of resource that is answered: the requests that
// queued behind it become the next unit, or the resource is idle again.
func (c *coalescer) handOn(resource string) {
	c.mu.Lock()
	q := c.queues[resource]
	if q == nil || len(q.waiting) == 0 {
		delete(c.queues, resource)
		c.mu.Unlock()
		return
	}
	n := min(len(q.waiting), maxGroup)
	requests := q.waiting[:n:n]
	q.waiting = q.waiting[n:]
	c.mu.Unlock()
	u := c.unit(resource, requests)
	c.com.enqueue(&u)
}

// Queued is how many requests of resource wait behind its unit in flight.
func (s *Store) Queued(resource string) int {
	s.coal.mu.Lock()
	defer s.coal.mu.Unlock()
	if q := s.coal.queues[resource]; q != nil {
		return len(q.waiting)
	}
	return 0
}

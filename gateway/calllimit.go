package gateway

import (
	"cmp"
	"fmt"
	"net/http"
	"sync"
)

// callLimit bounds the calls served at once, in all and per client, without
// queueing: a call past either bound is refused at once (503). Lease calls
// hold their place while they wait for a lock, for minutes at most, so
// without it one client could hold every goroutine and buffer it likes.
type callLimit struct {
	mu        sync.Mutex
	total     int
	perClient map[string]int
	max       int
	maxClient int
	what      string // what is counted, for errors; "" for lease calls
}

func newCallLimit(max, perClient int) *callLimit {
	return &callLimit{max: max, maxClient: perClient, perClient: map[string]int{}}
}

// enter takes a place for client, or says why not; every nil return must
// be paired with leave.
func (c *callLimit) enter(client string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	what := cmp.Or(c.what, "lease calls")
	switch {
	case c.total >= c.max:
		return fmt.Errorf("%w: %d %s in progress, the most this gateway serves at once", ErrOverloaded, c.total, what)
	case c.perClient[client] >= c.maxClient:
		return fmt.Errorf("%w: %d %s of this client in progress, its share", ErrOverloaded, c.perClient[client], what)
	}
	c.total++
	c.perClient[client]++
	return nil
}

func (c *callLimit) leave(client string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if c.perClient[client]--; c.perClient[client] == 0 {
		delete(c.perClient, client)
	}
}

// limitLeaseCalls serves a lease call if its client and this gateway are
// within their limits.
func (g *Gateway) limitLeaseCalls(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client := clientName(r.Context())
		if err := g.leaseCalls.enter(client); err != nil {
			g.writeProblem(w, r, err, problemScope{})
			return
		}
		defer g.leaseCalls.leave(client)
		next.ServeHTTP(w, r)
	})
}

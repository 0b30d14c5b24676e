package admission

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Config says how a Gate admits.
type Config struct {
	// Limit is how many turns may be taken at once; Wait how long a
	// waiter waits for one before it is refused.
	Limit int
	Wait  time.Duration
	// Refused is wrapped by every refusal, What names the work counted
	// in its message ("writes", "transactions").
	Refused error
	What    string
	// Waiting counts the waiters, Waited observes each wait in seconds,
	// admitted or not; either may be nil.
	Waiting Gauge
	Waited  Observer
}

// Gauge and Observer are what a Gate reports its waits to: a Prometheus
// gauge and histogram fit.
type Gauge interface {
	Inc()
	Dec()
}

type Observer interface{ Observe(float64) }

// Gate hands out turns, at most Config.Limit at once.
type Gate struct {
	cfg Config

	mu     sync.Mutex
	total  int                  // turns taken
	held   map[string]int       // turns taken, per client
	queues map[string][]*waiter // waiters, per client, oldest first
	queued int                  // waiters, all clients
}

// waiter waits for a turn: granted is closed when it has one.
type waiter struct{ granted chan struct{} }

// New returns a Gate for cfg.
func New(cfg Config) *Gate {
	return &Gate{cfg: cfg, held: map[string]int{}, queues: map[string][]*waiter{}}
}

// Limit is the gate's number of turns.
func (g *Gate) Limit() int { return g.cfg.Limit }

// InFlight is how many turns are taken.
func (g *Gate) InFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.total
}

// Counts are the turns taken and the waiters, per client.
func (g *Gate) Counts() (held, waiting map[string]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	held, waiting = make(map[string]int, len(g.held)), make(map[string]int, len(g.queues))
	for c, n := range g.held {
		held[c] = n
	}
	for c, q := range g.queues {
		waiting[c] = len(q)
	}
	return held, waiting
}

// Enter takes a turn for client, waiting at most the gate's Wait, or
// until ctx is done; every nil return must be paired with Leave. A
// refusal wraps Config.Refused, and ctx's error if that ended the wait.
func (g *Gate) Enter(ctx context.Context, client string) error {
	g.mu.Lock()
	if g.total < g.cfg.Limit && g.queued == 0 {
		g.take(client)
		g.mu.Unlock()
		return nil
	}
	w := &waiter{granted: make(chan struct{})}
	g.queues[client] = append(g.queues[client], w)
	g.queued++
	g.mu.Unlock()

	if g.cfg.Waiting != nil {
		g.cfg.Waiting.Inc()
		defer g.cfg.Waiting.Dec()
	}
	if g.cfg.Waited != nil {
		start := time.Now()
		defer func() { g.cfg.Waited.Observe(time.Since(start).Seconds()) }()
	}
	t := time.NewTimer(g.cfg.Wait)
	defer t.Stop()
	var err error
	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
		err = fmt.Errorf("%w: the request ended while it waited for a turn: %w", g.cfg.Refused, ctx.Err())
	case <-t.C:
		err = fmt.Errorf("%w: %d %s in flight, and this one waited %v for a turn", g.cfg.Refused, g.cfg.Limit, g.cfg.What, g.cfg.Wait)
	}
	g.mu.Lock()
	if g.dequeue(client, w) {
		g.mu.Unlock()
		return err
	}
	g.mu.Unlock()
	g.Leave(client) // granted as it gave up: handed on
	return err
}

// Leave gives client's turn back, to the waiter next in fairness.
func (g *Gate) Leave(client string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.total--
	if g.held[client]--; g.held[client] <= 0 {
		delete(g.held, client)
	}
	for g.total < g.cfg.Limit && g.queued > 0 {
		next := ""
		found := false
		for c := range g.queues {
			if !found || g.held[c] < g.held[next] || (g.held[c] == g.held[next] && c < next) {
				next, found = c, true
			}
		}
		w := g.queues[next][0]
		g.dequeue(next, w)
		g.take(next)
		close(w.granted)
	}
}

// take counts a turn of client's; g.mu is held.
func (g *Gate) take(client string) {
	g.total++
	g.held[client]++
}

// dequeue takes w out of client's line, reporting whether it was there
// (not granted yet); g.mu is held.
func (g *Gate) dequeue(client string, w *waiter) bool {
	q := g.queues[client]
	for i, x := range q {
		if x == w {
			if q = append(q[:i:i], q[i+1:]...); len(q) == 0 {
				delete(g.queues, client)
			} else {
				g.queues[client] = q
			}
			g.queued--
			return true
		}
	}
	return false
}

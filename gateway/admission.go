package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// minMaxInFlight is the floor of Config.MaxInFlight's default: enough for
// a hot resource's coalesced transactions to stay large (BENCHMARKS.md).
const minMaxInFlight = 64

// defaultBodyTimeout bounds how long an admitted write's body may take to
// arrive. Clients send small bodies with their headers; on any network that
// deserves the name, 64 KiB takes milliseconds.
const defaultBodyTimeout = 5 * time.Second

// defaultMaxInFlight admits eight writes per pooled connection, at least
// minMaxInFlight: a write past the gate either holds a connection or waits
// for one, so more would only queue deeper in the pool.
func defaultMaxInFlight(poolSize int32) int {
	return max(minMaxInFlight, 8*int(poolSize))
}

// admission bounds how many writes are past the gate at once: waiting for a
// connection, in PostgreSQL. A write waiting at the gate holds what net/http
// allocated for its request, its body and decoded arguments, and the
// background reader net/http runs once a body is consumed, on a shallow
// stack the collector can shrink. Past the gate a write holds a pgx-deep
// stack. With many clients this is what lets a memory limit work: without
// the gate, a limit the waiting writes come near makes the collector run
// nearly back to back (BENCHMARKS.md measured it).
//
// Turns are shared fairly between clients (the policy's names; every
// caller is one client where it declares none): a turn given back goes to
// a waiting write of the client that holds the fewest, the oldest of
// that client's first. A client alone may take every turn; once another
// waits, it gets the next turn given back, however many writes the first
// has waiting. So a client's flood (of forged tokens, say) slows that
// client, not the others (issue 34: another client's writes went from
// 22 ms to 1.2-1.5 s, then 503).
//
// Nothing reads a waiting write's connection, so a client that gives up
// while its write waits is not noticed: once admitted, its write is read
// and applied like any other whose client left mid-flight. That is the
// HTTP contract for any request in flight; retries carry an
// Idempotency-Key.
type admission struct {
	limit   int
	wait    time.Duration // how long a write may wait for a turn
	waiting prometheus.Gauge
	waited  prometheus.Observer // seconds, for writes that did wait

	mu     sync.Mutex
	total  int                  // turns taken
	held   map[string]int       // turns taken, per client
	queues map[string][]*waiter // waiting writes, per client, oldest first
	queued int                  // waiting writes, all clients
}

// waiter is a write waiting for a turn: granted is closed when it has one.
type waiter struct{ granted chan struct{} }

func newAdmission(limit int, wait time.Duration, waiting prometheus.Gauge, waited prometheus.Observer) *admission {
	return &admission{limit: limit, wait: wait, waiting: waiting, waited: waited,
		held: map[string]int{}, queues: map[string][]*waiter{}}
}

// inFlight is how many turns are taken.
func (a *admission) inFlight() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.total
}

// enter takes a turn for client, waiting at most a.wait; every nil return
// must be paired with leave. A write refused here has not been applied:
// nothing was written.
func (a *admission) enter(ctx context.Context, client string) error {
	a.mu.Lock()
	if a.total < a.limit && a.queued == 0 {
		a.take(client)
		a.mu.Unlock()
		return nil
	}
	w := &waiter{granted: make(chan struct{})}
	a.queues[client] = append(a.queues[client], w)
	a.queued++
	a.mu.Unlock()

	a.waiting.Inc()
	start := time.Now()
	defer func() {
		a.waiting.Dec()
		a.waited.Observe(time.Since(start).Seconds())
	}()
	t := time.NewTimer(a.wait)
	defer t.Stop()
	var err error
	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
		err = fmt.Errorf("%w: the request ended while it waited for a turn: %w", ErrOverloaded, ctx.Err())
	case <-t.C:
		err = fmt.Errorf("%w: %d writes in flight, and this one waited %v for a turn", ErrOverloaded, a.limit, a.wait)
	}
	a.mu.Lock()
	if a.dequeue(client, w) {
		a.mu.Unlock()
		return err
	}
	a.mu.Unlock()
	a.leave(client) // granted as it gave up: handed on
	return err
}

// leave gives client's turn back, to the write next in fairness.
func (a *admission) leave(client string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.total--
	if a.held[client]--; a.held[client] <= 0 {
		delete(a.held, client)
	}
	for a.total < a.limit && a.queued > 0 {
		next := ""
		found := false
		for c := range a.queues {
			if !found || a.held[c] < a.held[next] || (a.held[c] == a.held[next] && c < next) {
				next, found = c, true
			}
		}
		w := a.queues[next][0]
		a.dequeue(next, w)
		a.take(next)
		close(w.granted)
	}
}

// take counts a turn of client's; a.mu is held.
func (a *admission) take(client string) {
	a.total++
	a.held[client]++
}

// dequeue takes w out of client's line, reporting whether it was there
// (not granted yet); a.mu is held.
func (a *admission) dequeue(client string, w *waiter) bool {
	q := a.queues[client]
	for i, x := range q {
		if x == w {
			if q = append(q[:i:i], q[i+1:]...); len(q) == 0 {
				delete(a.queues, client)
			} else {
				a.queues[client] = q
			}
			a.queued--
			return true
		}
	}
	return false
}

package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/policy"
)

// minMaxInFlight is the floor of Config.MaxInFlight's default: enough for
// a hot resource's coalesced batches to stay large (BENCHMARKS.md).
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
// allocated for its request, its body, and the background reader net/http
// runs once a body is consumed, on a shallow stack the collector can
// shrink. Past the gate a write holds its arguments and a pgx-deep stack. With 1,000 clients this is what lets a memory limit
// work: under GOMEMLIMIT=40MiB the gateway ran at 5,100-5,800 writes/s in
// 59 MiB, and without the gate at 3,100-3,800 in 65 MiB (BENCHMARKS.md).
//
// Nothing reads a waiting write's connection, so a client that gives up
// while its write waits is not noticed: once admitted, its write is read
// and applied like any other whose client left mid-flight. That is the
// HTTP contract for any request in flight; retries carry an
// Idempotency-Key.
type admission struct {
	slots   chan struct{}
	wait    time.Duration // how long a write may wait for a slot
	waiting prometheus.Gauge
	waited  prometheus.Observer // seconds, for writes that did wait
}

func newAdmission(limit int, wait time.Duration, waiting prometheus.Gauge, waited prometheus.Observer) *admission {
	return &admission{slots: make(chan struct{}, limit), wait: wait, waiting: waiting, waited: waited}
}

// enter takes a slot, waiting at most a.wait; every nil return must be
// paired with leave. A write refused here has not been read: nothing was
// written.
func (a *admission) enter(ctx context.Context) error {
	select {
	case a.slots <- struct{}{}:
		return nil
	default:
	}
	a.waiting.Inc()
	start := time.Now()
	defer func() {
		a.waiting.Dec()
		a.waited.Observe(time.Since(start).Seconds())
	}()
	t := time.NewTimer(a.wait)
	defer t.Stop()
	select {
	case a.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: the request ended while it waited for a turn: %w", ErrOverloaded, ctx.Err())
	case <-t.C:
		return fmt.Errorf("%w: %d writes in flight, and this one waited %v for a turn", ErrOverloaded, cap(a.slots), a.wait)
	}
}

func (a *admission) leave() { <-a.slots }

// gateWrites makes each write wait for a turn at the admission gate before
// anything else of it runs, authentication included: on the shallowest
// stack, so the collector can shrink the stacks of the goroutines waiting
// there (BENCHMARKS.md measured a gate inside the write handler: the
// waiting stacks kept their grown size). Its body is read first, within
// the body timeout: a client that withholds its body holds its connection
// and a small buffer, never a turn (issue 7: 300 such connections made
// every real write wait 8-10 s or fail). The price is that an
// unauthenticated write queues like any other before it is refused.
func (g *Gateway) gateWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op, isWrite := gatedCall(r.URL.Path)
		if r.Method != http.MethodPost || !isWrite || g.refusedUnread(r, op) {
			next.ServeHTTP(w, r)
			return
		}
		// The body first: a write whose body does not arrive must not hold
		// a turn while others wait for one.
		if _, err := g.readBodyWithin(w, r); err != nil {
			g.refuseAtTheGate(w, r, op, err)
			return
		}
		if err := g.admit.enter(r.Context()); err != nil {
			g.refuseAtTheGate(w, r, op, err)
			return
		}
		defer g.admit.leave()
		next.ServeHTTP(w, r)
	})
}

// gatedCall names the operation of a call that passes the gate: a write,
// a batch, a read or a check, each of which holds a PostgreSQL connection
// while it runs.
func gatedCall(path string) (op string, gated bool) {
	switch path {
	case "/v1/batch":
		return policy.BatchName, true
	case "/v1/fences/check":
		return checkOperation, true
	}
	if op, gated = strings.CutPrefix(path, "/v1/ops/"); gated {
		return op, true
	}
	return strings.CutPrefix(path, "/v1/reads/")
}

// refusedUnread reports whether a write to op will be refused before its
// body is read (no such operation, no credentials, no token), so the gate
// need neither wait for the body nor give a turn: the refusal comes at
// once, and a client that sent Expect: 100-continue is never asked for a
// body that would be thrown away. Each condition is one the handlers
// check first; a request that meets none is read and queued as usual.
func (g *Gateway) refusedUnread(r *http.Request, op string) bool {
	if g.cfg.Policy.AuthRequired() && r.Header.Get("Authorization") == "" && (r.TLS == nil || len(r.TLS.PeerCertificates) == 0) {
		return true
	}
	switch op {
	case policy.BatchName:
		return false
	case checkOperation:
		return len(r.Header.Values(TokenHeader)) == 0
	}
	_, known := g.cfg.Policy.Operations[op]
	return !known || len(r.Header.Values(TokenHeader)) == 0
}

// refuseAtTheGate answers a write that waited too long, counted under its
// operation when the policy has one by that name.
func (g *Gateway) refuseAtTheGate(w http.ResponseWriter, r *http.Request, op string, err error) {
	keyed := len(r.Header.Values(IdempotencyHeader)) > 0
	if keyed {
		// Not this attempt, but an earlier one with its key may be on
		// its way: the key's outcome is unknown.
		err = fmt.Errorf("%w (%w)", err, fence.ErrKeyInFlight)
	}
	p := g.writeProblem(w, r, err, problemScope{Operation: clip.String(op, 64), Keyed: keyed})
	if o, known := g.cfg.Policy.Operations[op]; op == checkOperation || (known && o.Read) {
		g.metrics.reads.WithLabelValues(op, p.Kind()).Inc()
	} else if _, known := g.metrics.ops[op]; known {
		g.metrics.writes.WithLabelValues(op, p.Kind()).Inc()
	}
}

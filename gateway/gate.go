package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/policy"
)

// gateWrites reads each gated call's body before anything else of it
// runs, within the body timeout: a client that withholds its body holds
// its connection and a small buffer, never a turn at the admission gate
// (issue 7: 300 such connections made every real write wait 8-10 s or
// fail). The turn itself is taken once the caller is authenticated
// (admitCalls), so that turns are shared by client, and an
// unauthenticated write is refused without one.
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
		next.ServeHTTP(w, r)
	})
}

// admitCalls reads a gated call with prepare (its body decoded, its
// resources derived) and decides its tokens' signatures, then makes it
// wait for a turn at the admission gate, its client's (fair between
// clients: package admission): a call refused by then is answered without a turn,
// unless it is keyed and its key's outcome must be read or settled
// (call.settles), and a forged token never holds one, even while it waits
// for a reload of the signing keys (issue 34). The wait is on a shallow
// stack, so the collector can shrink the stacks of the goroutines waiting
// there (BENCHMARKS.md measured a gate inside the write handler: the
// waiting stacks kept their grown size). The call and its turn ride in the
// request's context to the handler (callOf): a wait on etcd during
// validation gives the turn back for its length (turnOf).
func (g *Gateway) admitCalls(prepare func(*http.Request) *call) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c := prepare(r)
			if c.err == nil {
				c.err = g.checkSignatures(r.Context(), c.req, &c.scope)
			}
			c.turn = g.admit.Turn(clientName(r.Context()))
			if c.err == nil || c.settles() {
				if err := c.turn.Take(r.Context()); err != nil {
					op, _ := gatedCall(r.URL.Path)
					g.refuseAtTheGate(w, r, op, err)
					return
				}
				defer c.turn.Release()
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callKey{}, c)))
		})
	}
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

package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// semaphoreState is GET /v1/leases?resource=<semaphore>'s answer.
type semaphoreState struct {
	Resource string
	Revision int64
	Permits  int
	Holders  []struct {
		Permit           int
		Resource, Token  string
		TTL, Transitions int64
		Value            string
	}
	Waiters []struct{ Value string }
	Waiting int64
	// Transitions counts every slot's grants.
	Transitions int64
	Truncated   bool
}

func (h *harness) observeSemaphore(sem string) (semaphoreState, []byte) {
	h.t.Helper()
	r := h.do(http.MethodGet, "/v1/leases?resource="+url.QueryEscape(sem), nil, "")
	if r.Status != http.StatusOK {
		h.t.Fatalf("observe %s: %d %s", sem, r.Status, r.Body)
	}
	var st semaphoreState
	decodeJSON(h.t, r.Body, &st)
	return st, r.Body
}

// TestObserveAndWatchASemaphore: with 2 permits and 3 contenders, GET
// /v1/leases of the semaphore shows both held slots (permit, slot, token
// E:R#k, TTL, value, the slot's transitions) and the third waiting, with
// no lease ID; its watch starts with both slots' states, reports each
// grant naming the slot and permit, and, when a holder releases, the
// release and the grant of its slot to the waiter. A slot's own name is
// still observed as the lock it is.
func TestObserveAndWatchASemaphore(t *testing.T) {
	h := newHarness(t, semaphorePolicy(t))
	const sem = "pool/p21"
	s, wr := h.watch("resource="+url.QueryEscape(sem), nil)
	if wr.Status != http.StatusOK {
		t.Fatalf("watch %s: %d %s", sem, wr.Status, wr.Body)
	}
	base := map[int]int64{} // each slot's grants before: the package's tests share etcd
	for k := 1; k <= 2; k++ {
		ev := s.nextEvent()
		if ev.Event != "state" || ev.Data.Resource != tokens.PermitResource(sem, k) || ev.Data.Permit != k || ev.Data.Holder != nil {
			t.Fatalf("state event %d: %s permit %d; want slot %d free", k, ev, ev.Data.Permit, k)
		}
		base[k] = ev.Data.Transitions
	}
	if ev := s.nextEvent(); ev.Event != "synced" {
		t.Fatalf("after the slots' states: %s, want synced", ev)
	}
	grantedOf := func(l permitLease, value string) {
		t.Helper()
		ev := s.nextEvent()
		if ev.Event != "granted" || ev.Data.Resource != l.Resource || ev.Data.Permit != l.Permit || ev.Data.Holder == nil ||
			ev.Data.Holder.Token != l.Plain || ev.Data.Holder.Value != value {
			t.Fatalf("got %s permit %d; want %s granted to %s (%q), permit %d", ev, ev.Data.Permit, l.Resource, l.Plain, value, l.Permit)
		}
	}
	permit := func(value string, wait int) (permitLease, response) {
		return h.acquirePermit(fmt.Sprintf(`{"resource": %q, "ttl": 30, "wait": %d, "value": %q}`, sem, wait, value))
	}
	held := map[string]permitLease{}
	for _, v := range []string{"a", "b"} {
		l, r := permit(v, 0)
		if r.Status != http.StatusCreated {
			t.Fatalf("permit %s: %d %s", v, r.Status, r.Body)
		}
		held[v] = l
		grantedOf(l, v)
	}
	a, b := held["a"], held["b"]
	third := make(chan permitLease, 1)
	go func() {
		l, r := permit("c", 30)
		if r.Status != http.StatusCreated {
			t.Errorf("the third: %d %s", r.Status, r.Body)
		}
		third <- l
	}()
	var st semaphoreState
	var body []byte
	waitOrFail(t, "the third to queue", func() bool {
		st, body = h.observeSemaphore(sem)
		return st.Waiting == 1
	})
	if st.Resource != sem || st.Permits != 2 || st.Revision == 0 || len(st.Holders) != 2 || st.Transitions != base[1]+base[2]+2 || st.Truncated {
		t.Fatalf("observed %s", body)
	}
	byPermit := []permitLease{a, b}
	if a.Permit > b.Permit {
		byPermit = []permitLease{b, a}
	}
	for i, l := range byPermit {
		got := st.Holders[i]
		if got.Permit != l.Permit || got.Resource != l.Resource || got.Token != l.Plain || got.TTL <= 0 || got.Transitions != base[l.Permit]+1 {
			t.Errorf("holder %d: %+v; want slot %d (%s) with %s, a TTL, 1 transition", i, got, l.Permit, l.Resource, l.Plain)
		}
	}
	if len(st.Waiters) != 1 || st.Waiters[0].Value != "c" {
		t.Errorf("waiters %s; want the third's value", body)
	}
	var fields map[string]json.RawMessage
	decodeJSON(t, body, &fields)
	if _, ok := fields["holder"]; ok {
		t.Errorf("a semaphore's answer has a holder field: %s; its holders are in holders", body)
	}
	for _, l := range []permitLease{a, b} {
		if strings.Contains(string(body), l.ID) || strings.Contains(string(body), l.Token) {
			t.Errorf("the observation shows a lease ID or signed token: %s", body)
		}
	}

	// The first holder releases: its slot passes to the waiter.
	h.release(a.lease)
	ev := s.nextEvent()
	if ev.Event != "released" || ev.Data.Resource != a.Resource || ev.Data.Permit != a.Permit || ev.Data.Holder.Token != a.Plain {
		t.Fatalf("got %s permit %d; want %s released, permit %d", ev, ev.Data.Permit, a.Resource, a.Permit)
	}
	c := <-third
	if c.Permit != a.Permit {
		t.Fatalf("the waiter got slot %d, want the released %d", c.Permit, a.Permit)
	}
	grantedOf(c, "c")
	st, body = h.observeSemaphore(sem)
	if len(st.Holders) != 2 || len(st.Waiters) != 0 || st.Waiting != 0 || st.Transitions != base[1]+base[2]+3 {
		t.Fatalf("after the release: %s; want two holders, none waiting, one more transition", body)
	}
	for _, got := range st.Holders {
		if got.Permit == c.Permit && (got.Token != c.Plain || got.Value != "c" || got.Transitions != base[c.Permit]+2) {
			t.Errorf("slot %d after the release: %+v; want the waiter's %s, its second grant", c.Permit, got, c.Plain)
		}
	}

	// A slot's own name is the lock it is: one holder, its token E:R#k
	// as the semaphore shows it.
	var slot struct {
		Holder  *struct{ Token, Value string }
		Permits *int
	}
	decodeJSON(t, h.do(http.MethodGet, "/v1/leases?resource="+url.QueryEscape(c.Resource), nil, "").Body, &slot)
	if slot.Holder == nil || slot.Holder.Token != c.Plain || slot.Holder.Value != "c" || slot.Permits != nil {
		t.Errorf("observed slot %s: %+v; want the lock held by %s", c.Resource, slot, c.Plain)
	}
	h.release(b.lease)
	h.release(c.lease)
}

// TestWatchASemaphoreOutsideTheClientsScope: a semaphore is watched only
// by a client that may lease it, as a lock is; the refusal holds no
// stream. Observing it is scoped as observing a lock is.
func TestWatchASemaphoreOutsideTheClientsScope(t *testing.T) {
	h := newHarness(t, semaphorePolicy(t)+`
clients:
  billing:
    token_sha256: `+sha256Hex("billing-secret")+`
    operations: [debit, credit]
  worker:
    token_sha256: `+sha256Hex("worker-secret")+`
    operations: [work]
`)
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	_, r := h.watch("resource=pool/p22", bearer("billing-secret"))
	if r.Status != http.StatusForbidden || r.Problem.Kind() != "forbidden" || !strings.Contains(r.Problem.Detail, "may not lease") {
		t.Fatalf("billing's watch of pool/p22: %d %s; want 403 forbidden", r.Status, r.Body)
	}
	if !testenv.WaitFor(10*time.Second, func() bool {
		return strings.Contains(metricsText(t, h.base), "fencegw_lease_watches 0")
	}) {
		t.Fatal("a refused watch holds a stream")
	}
	// Observing is scoped as watching is: billing may observe neither the
	// semaphore nor its slot, a lock; the worker may.
	for _, name := range []string{"pool/p22", "pool/p22#1"} {
		if r := h.do(http.MethodGet, "/v1/leases?resource="+url.QueryEscape(name), bearer("billing-secret"), ""); r.Status != http.StatusForbidden || r.Problem.Kind() != "forbidden" {
			t.Errorf("billing's GET of %s: %d %s; want 403 forbidden", name, r.Status, r.Body)
		}
		if r := h.do(http.MethodGet, "/v1/leases?resource="+url.QueryEscape(name), bearer("worker-secret"), ""); r.Status != http.StatusOK {
			t.Errorf("worker's GET of %s: %d %s; want 200", name, r.Status, r.Body)
		}
	}
	if r := h.do(http.MethodGet, "/v1/leases?resource=account/acct-1", bearer("billing-secret"), ""); r.Status != http.StatusOK {
		t.Errorf("billing's GET of an account it writes: %d %s; want 200", r.Status, r.Body)
	}
	s, r := h.watch("resource=pool/p22", bearer("worker-secret"))
	if r.Status != http.StatusOK {
		t.Fatalf("worker's watch of pool/p22: %d %s", r.Status, r.Body)
	}
	if ev := s.nextEvent(); ev.Event != "state" || ev.Data.Resource != "pool/p22#1" || ev.Data.Permit != 1 {
		t.Fatalf("worker's watch began with %s permit %d; want slot 1's state", ev, ev.Data.Permit)
	}
}

// TestOpenAPIObserveASemaphore: GET /v1/leases's answers for a semaphore
// held and waited for, and for one of its slots, match the document.
func TestOpenAPIObserveASemaphore(t *testing.T) {
	yaml := semaphorePolicy(t)
	router := openAPIRouter(t, yaml)
	h := newHarness(t, yaml)
	a, b := h.mustAcquirePermit("p23"), h.mustAcquirePermit("p23")
	defer h.release(b.lease)
	waiting := make(chan response, 1)
	go func() {
		_, r := h.acquirePermit(`{"resource": "pool/p23", "ttl": 30, "wait": 30, "value": "next"}`)
		waiting <- r
	}()
	waitOrFail(t, "the third to queue", func() bool {
		st, _ := h.observeSemaphore("pool/p23")
		return st.Waiting == 1
	})
	for _, resource := range []string{"pool/p23", a.Resource} {
		req, _ := http.NewRequest(http.MethodGet, h.base+"/v1/leases?resource="+url.QueryEscape(resource), nil)
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatalf("the document has no route for GET /v1/leases: %v", err)
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Fatalf("the document refuses GET /v1/leases?resource=%s: %v", resource, err)
		}
		r := h.do(http.MethodGet, "/v1/leases?resource="+url.QueryEscape(resource), nil, "")
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: r.Status, Header: r.Header,
			Options: &openapi3filter.Options{IncludeResponseStatus: true}}
		out.SetBodyBytes(r.Body)
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("%s: the answer %d %s does not match the document: %v", resource, r.Status, r.Body, err)
		}
	}
	h.release(a.lease)
	if r := <-waiting; r.Status == http.StatusCreated {
		var l struct {
			LeaseID string `json:"lease_id"`
		}
		decodeJSON(t, r.Body, &l)
		h.release(lease{ID: l.LeaseID})
	}
}

// TestObserveANameOfManySlotSuffixes: a name of sixty slot suffixes
// (pool/p22#1#1…) is observed and watched as the lock it is, at once:
// the policy read each suffix's rest twice, so either request held a CPU
// for ever.
func TestObserveANameOfManySlotSuffixes(t *testing.T) {
	h := newHarness(t, semaphorePolicy(t))
	name := "pool/p22" + strings.Repeat("#1", 60)
	r := h.do(http.MethodGet, "/v1/leases?resource="+url.QueryEscape(name), nil, "")
	if r.Status != http.StatusOK || strings.Contains(string(r.Body), `"permits"`) {
		t.Fatalf("observe %s: %d %s; want the lock it is", name, r.Status, r.Body)
	}
	s, wr := h.watch("resource="+url.QueryEscape(name), nil)
	if wr.Status != http.StatusOK {
		t.Fatalf("watch %s: %d %s", name, wr.Status, wr.Body)
	}
	s.close()
}

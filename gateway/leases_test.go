package gateway_test

import (
	"fmt"
	"github.com/fencegw/fencegw/gateway"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

func TestLeaseLifecycleOverHTTP(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const resource = "account/acct-51"
	a := h.mustAcquire(resource, 5, 0)
	if a.Resource != resource || a.TTL < 5 || a.ID == "" {
		t.Fatalf("lease = %+v", a)
	}
	_, r := h.acquire(resource, 5, 0)
	if r.Status != http.StatusConflict || r.Problem.Kind() != "locked" || r.Problem.CurrentToken != a.Plain {
		t.Fatalf("second acquire: %d %s, want 409 locked with current_token %s", r.Status, r.Body, a.Token)
	}
	if r := h.do(http.MethodPost, "/v1/leases/"+a.ID+"/keepalive", nil, ""); r.Status != http.StatusOK {
		t.Fatalf("keepalive: %d %s", r.Status, r.Body)
	}
	// One lease, one name: its id in capitals or with a leading zero is
	// refused, and releases nothing.
	for _, alias := range []string{strings.ToUpper(a.ID), "0" + a.ID} {
		if alias == a.ID {
			continue // an id of digits only has no capitals
		}
		if r := h.do(http.MethodDelete, "/v1/leases/"+alias, nil, ""); r.Status != http.StatusBadRequest {
			t.Fatalf("release as %s: %d %s, want 400", alias, r.Status, r.Body)
		}
	}
	if _, r := h.acquire(resource, 5, 0); r.Status != http.StatusConflict {
		t.Fatalf("after releases under aliases: %d %s, want the lease still held (409)", r.Status, r.Body)
	}
	h.release(a)
	if r := h.do(http.MethodPost, "/v1/leases/"+a.ID+"/keepalive", nil, ""); r.Status != http.StatusNotFound || r.Problem.Kind() != "lease-not-found" {
		t.Fatalf("keepalive after release: %d %s, want 404 lease-not-found", r.Status, r.Body)
	}
	if r := h.do(http.MethodDelete, "/v1/leases/"+a.ID, nil, ""); r.Status != http.StatusNotFound {
		t.Fatalf("second release: %d %s, want 404", r.Status, r.Body)
	}
	b := h.mustAcquire(resource, 5, 0)
	if mustToken(t, b.Token).Compare(mustToken(t, a.Token)) <= 0 {
		t.Fatalf("token after release %s is not newer than %s", b.Token, a.Token)
	}
	h.release(b)
	m := metricsText(t, h.base)
	for _, want := range []string{
		`fencegw_leases_total{event="granted"} 2`, `fencegw_leases_total{event="locked"} 2`,
		`fencegw_leases_total{event="renewed"} 1`, `fencegw_leases_total{event="renew_failed"} 1`,
		`fencegw_leases_total{event="released"} 2`, "fencegw_lease_wait_seconds_count 2",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestLeaseRequestsValidated(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	tests := []struct {
		name, method, path, body string
		status                   int
		kind                     string
		contentType              string // "" sends application/json
	}{
		{"unknown field", "POST", "/v1/leases", `{"resource": "job/r", "ttl": 5, "owner": "me"}`, 400, "bad-request", ""},
		{"a key twice", "POST", "/v1/leases", `{"resource": "job/a", "resource": "job/b"}`, 400, "bad-request", ""},
		{"a key in capitals", "POST", "/v1/leases", `{"RESOURCE": "r"}`, 400, "bad-request", ""},
		{"invalid UTF-8", "POST", "/v1/leases", "{\"resource\": \"r\xff\"}", 400, "bad-request", ""},
		{"a lone surrogate", "POST", "/v1/leases", `{"resource": "job/r\ud800"}`, 400, "bad-request", ""},
		{"a zero-width space", "POST", "/v1/leases", `{"resource": "job/r\u200b"}`, 400, "bad-request", ""},
		{"a space around", "POST", "/v1/leases", `{"resource": " job/r"}`, 400, "bad-request", ""},
		{"text/plain", "POST", "/v1/leases", `{"resource": "job/r"}`, 415, "unsupported-media-type", "text/plain"},
		{"a form", "POST", "/v1/leases", `{"resource": "job/r"}`, 415, "unsupported-media-type", "application/x-www-form-urlencoded"},
		{"a batch as text", "POST", "/v1/batch", `{"writes": []}`, 415, "unsupported-media-type", "text/plain;charset=UTF-8"},
		{"ttl zero", "POST", "/v1/leases", `{"resource": "job/r", "ttl": 0}`, 400, "bad-request", ""},
		{"ttl too long", "POST", "/v1/leases", `{"resource": "job/r", "ttl": 86400}`, 400, "bad-request", ""},
		{"ttl not integer", "POST", "/v1/leases", `{"resource": "job/r", "ttl": 1.5}`, 400, "bad-request", ""},
		{"wait negative", "POST", "/v1/leases", `{"resource": "job/r", "wait": -1}`, 400, "bad-request", ""},
		{"wait too long", "POST", "/v1/leases", `{"resource": "job/r", "wait": 3600}`, 400, "bad-request", ""},
		{"no resource", "POST", "/v1/leases", `{"ttl": 5}`, 400, "bad-request", ""},
		{"resource with newline", "POST", "/v1/leases", `{"resource": "a\nb"}`, 400, "bad-request", ""},
		{"not JSON", "POST", "/v1/leases", `resource=r`, 400, "bad-request", ""},
		{"trailing data", "POST", "/v1/leases", `{"resource": "job/r"} {}`, 400, "bad-request", ""},
		{"observe two resources", "GET", "/v1/leases?resource=a&resource=b", ``, 400, "bad-request", ""},
		{"observe with another parameter", "GET", "/v1/leases?resource=a&limit=5", ``, 400, "bad-request", ""},
		{"observe nothing", "GET", "/v1/leases", ``, 400, "bad-request", ""},
		{"observe a broken query", "GET", "/v1/leases?resource=%zz", ``, 400, "bad-request", ""},
		{"bad lease id", "POST", "/v1/leases/zz-top/keepalive", ``, 400, "bad-request", ""},
		{"negative lease id", "DELETE", "/v1/leases/-5", ``, 400, "bad-request", ""},
		{"lease id in capitals", "POST", "/v1/leases/ABC/keepalive", ``, 400, "bad-request", ""},
		{"lease id with a leading zero", "DELETE", "/v1/leases/0abc", ``, 400, "bad-request", ""},
		{"latin-1 body", "POST", "/v1/leases", `{"resource": "job/r"}`, 415, "unsupported-media-type", "application/json; charset=iso-8859-1"},
		{"broken media type", "POST", "/v1/leases", `{"resource": "job/r"}`, 415, "unsupported-media-type", "application/json; charset"},
		{"unknown path", "GET", "/v2/nothing", ``, 404, "not-found", ""},
		{"wrong method", "GET", "/v1/ops/debit", ``, 405, "method-not-allowed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr http.Header
			if tt.contentType != "" {
				hdr = http.Header{"Content-Type": {tt.contentType}}
			}
			r := h.do(tt.method, tt.path, hdr, tt.body)
			if r.Status != tt.status || r.Problem.Kind() != tt.kind {
				t.Fatalf("%s %s %s: %d %s, want %d %s", tt.method, tt.path, tt.body, r.Status, r.Body, tt.status, tt.kind)
			}
		})
	}
	state := h.state()
	for path, body := range map[string]string{"/v1/leases": `{"resource": "job/r"}`, "/v1/batch": batchBody(batchWrite("credit", debit("acct-1", 1), `"1:1"`))} {
		two := http.Header{"Content-Type": {"application/json", "text/plain"}}
		if r := h.do(http.MethodPost, path, two, body); r.Status != http.StatusUnsupportedMediaType {
			t.Errorf("%s with two Content-Types: %d %s, want 415", path, r.Status, r.Body)
		}
	}
	if h.state() != state {
		t.Error("a request refused for its Content-Type changed the database")
	}
	// None of the refused requests took a lock.
	for _, resource := range []string{"job/r", "job/a", "job/b", "job/r\u200b", " job/r"} {
		l, r := h.acquire(resource, 5, 0)
		if r.Status == http.StatusCreated {
			h.release(l)
		} else if resource == "job/r" || resource == "job/a" || resource == "job/b" {
			t.Errorf("%q after the refused requests: %d %s, want it free", resource, r.Status, r.Body)
		}
	}
}

// TestObserveLeaderElection: a lease on job/<name> with a value is
// leader election; GET /v1/leases shows the leader, its value and TTL, and
// the candidates in line, from any replica.
func TestObserveLeaderElection(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	replica := newHarness(t, demoPolicy(t, "monotonic")) // a second gateway on the same etcd
	const resource = "job/billing-leader"
	r := h.do(http.MethodPost, "/v1/leases", nil, `{"resource": "`+resource+`", "ttl": 10, "value": "10.0.0.7:8080"}`)
	if r.Status != http.StatusCreated {
		t.Fatalf("acquire: %d %s", r.Status, r.Body)
	}
	var leader struct {
		LeaseID string `json:"lease_id"`
		Token   string `json:"token"`
	}
	decodeJSON(t, r.Body, &leader)

	waiting := make(chan response, 1)
	go func() {
		waiting <- replica.do(http.MethodPost, "/v1/leases", nil, `{"resource": "`+resource+`", "ttl": 10, "wait": 20, "value": "10.0.0.8:8080"}`)
	}()
	var st struct {
		Holder *struct {
			LeaseID, Token, Value string
			TTL                   int64
		}
		Waiters []struct{ Token, Value string }
	}
	if !testenv.WaitFor(10*time.Second, func() bool {
		r := replica.do(http.MethodGet, "/v1/leases?resource="+url.QueryEscape(resource), nil, "")
		decodeJSON(t, r.Body, &st)
		return len(st.Waiters) == 1
	}) {
		t.Fatalf("the candidate never showed up as a waiter: %+v", st)
	}
	if st.Holder == nil || st.Holder.Token != plain(t, leader.Token) || st.Holder.Value != "10.0.0.7:8080" || st.Holder.TTL < 1 || st.Waiters[0].Value != "10.0.0.8:8080" {
		t.Fatalf("observed %+v, want leader %s with its value and TTL, one waiter", st, leader.Token)
	}

	if r := replica.do(http.MethodDelete, "/v1/leases/"+leader.LeaseID, nil, ""); r.Status != http.StatusNoContent {
		t.Fatalf("release on the other replica: %d %s", r.Status, r.Body)
	}
	next := <-waiting
	if next.Status != http.StatusCreated {
		t.Fatalf("candidate: %d %s", next.Status, next.Body)
	}
	r = h.do(http.MethodGet, "/v1/leases?resource="+url.QueryEscape(resource), nil, "")
	decodeJSON(t, r.Body, &st)
	if st.Holder == nil || st.Holder.Value != "10.0.0.8:8080" || len(st.Waiters) != 0 {
		t.Fatalf("after hand-over: %+v", st)
	}
	var l struct {
		LeaseID string `json:"lease_id"`
	}
	decodeJSON(t, next.Body, &l)
	h.do(http.MethodDelete, "/v1/leases/"+l.LeaseID, nil, "")

	r = h.do(http.MethodGet, "/v1/leases?resource="+url.QueryEscape(resource), nil, "")
	decodeJSON(t, r.Body, &st)
	if r.Status != http.StatusOK || st.Holder != nil {
		t.Fatalf("free lock observed as %d %s", r.Status, r.Body)
	}
	if r := h.do(http.MethodGet, "/v1/leases", nil, ""); r.Status != http.StatusBadRequest {
		t.Fatalf("observe without a resource: %d, want 400", r.Status)
	}
}

// TestLockDelayFromPolicy: the policy's lock_delay applies to leases of
// the resource's names.
func TestLockDelayFromPolicy(t *testing.T) {
	pol := strings.Replace(demoPolicy(t, "monotonic"), "compare: monotonic", "compare: monotonic\n    lock_delay: 30s", 1)
	h := newHarness(t, pol)
	const resource = "account/acct-96"
	h.mustAcquire(resource, 1, 0) // never renewed: it expires
	if !testenv.WaitFor(10*time.Second, func() bool {
		r := h.do(http.MethodGet, "/v1/leases?resource="+url.QueryEscape(resource), nil, "")
		return strings.Contains(string(r.Body), `"holder":null`)
	}) {
		t.Fatal("the lease never expired")
	}
	_, r := h.acquire(resource, 5, 0)
	if r.Status != http.StatusConflict || r.Problem.Kind() != "locked" || !strings.Contains(r.Problem.Detail, "lock-delay") {
		t.Fatalf("acquire after expiry: %d %s, want 409 locked in lock-delay", r.Status, r.Body)
	}
	other := h.mustAcquire("job/no-lock-delay", 1, 0) // a lock-only lease: no lock-delay
	h.release(other)
}

// TestFIFOAcrossReplicas: waiters queued through two gateway replicas are
// granted one at a time, in arrival order; each holder is alone.
func TestFIFOAcrossReplicas(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	replica := newHarness(t, demoPolicy(t, "monotonic"))
	const resource = "job/fifo-http"
	first := h.mustAcquire(resource, 10, 0)

	type grant struct {
		who int
		l   lease
	}
	grants := make(chan grant, 3)
	for i := range 3 {
		gw := []*harness{h, replica}[i%2]
		go func() {
			l, r := gw.acquire(resource, 10, 20)
			if r.Status != http.StatusCreated {
				t.Errorf("waiter %d: %d %s", i, r.Status, r.Body)
			}
			grants <- grant{i, l}
		}()
		// Arrival order is the order of the waiters' keys in etcd.
		if !testenv.WaitFor(10*time.Second, func() bool {
			var st struct{ Waiters []any }
			decodeJSON(t, h.do(http.MethodGet, "/v1/leases?resource="+resource, nil, "").Body, &st)
			return len(st.Waiters) == i+1
		}) {
			t.Fatalf("waiter %d never queued", i)
		}
	}
	holder := first
	for want := range 3 {
		select { // every waiter is in line: a grant at any instant before the release is a second holder
		case g := <-grants:
			t.Fatalf("waiter %d granted while %s held the lock", g.who, holder.Token)
		default:
		}
		[]*harness{replica, h}[want%2].release(holder)
		g := <-grants
		if g.who != want {
			t.Fatalf("granted waiter %d, want %d (FIFO)", g.who, want)
		}
		if mustToken(t, g.l.Token).Compare(mustToken(t, holder.Token)) <= 0 {
			t.Fatalf("waiter %d's token %s is not newer than %s", g.who, g.l.Token, holder.Token)
		}
		holder = g.l
	}
	h.release(holder)
}

// TestLeaseLimits: a client holds at most MaxLeasesPerClient leases
// (waiters included), and a gateway serves at most MaxLeaseRequests lease
// calls at once; past either, the call is refused and takes nothing.
func TestLeaseLimits(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t) // the count is per client across replicas: the shared etcd holds other tests' leases
	h := newHarnessOn(t, demoPolicy(t, "monotonic"), cli)
	few := h.sibling(func(c *gateway.Config) { c.MaxLeasesPerClient, c.MaxLeaseRequests = 3, 2 })
	var held []lease
	for i := range 3 {
		held = append(held, few.mustAcquire(fmt.Sprintf("job/limit-%d", i), 10, 0))
	}
	if _, r := few.acquire("job/limit-3", 10, 0); r.Status != http.StatusTooManyRequests || r.Problem.Kind() != "too-many-leases" {
		t.Fatalf("a fourth lease: %d %s, want 429 too-many-leases", r.Status, r.Body)
	}
	few.release(held[0])
	l := few.mustAcquire("job/limit-3", 10, 0) // a place was given back
	few.release(l)

	// Two calls waiting for held locks fill a gateway's places. (Its
	// lease limit is off: both would count as the client's leases, and
	// two acquisitions at once both pass the count.)
	lines := make(lineWriter, 1024)
	calls := h.sibling(func(c *gateway.Config) {
		c.MaxLeaseRequests = 2
		c.Logger = slog.New(slog.NewJSONHandler(lines, nil))
	})
	waiting := make(chan response, 2)
	for _, i := range []int{1, 2} {
		go func() {
			_, r := calls.acquire(fmt.Sprintf("job/limit-%d", i), 10, 30)
			waiting <- r
		}()
	}
	waitOrFail(t, "two calls to wait for their locks", func() bool {
		for _, i := range []int{1, 2} {
			var st struct{ Waiting int }
			decodeJSON(t, h.do(http.MethodGet, fmt.Sprintf("/v1/leases?resource=job/limit-%d", i), nil, "").Body, &st)
			if st.Waiting != 1 {
				return false
			}
		}
		return true
	})
	if _, r := calls.acquire("job/limit-9", 10, 0); r.Status != http.StatusServiceUnavailable || r.Problem.Kind() != "unavailable" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a third lease call beside two waiting: %d %s, want 503 with Retry-After", r.Status, r.Body)
	} else if m := accessLine(t, lines, r.Header.Get(gateway.RequestIDHeader)); m["route"] != "/v1/leases" {
		// Refused by middleware before its handler: still its route.
		t.Errorf("the refused call's access line names route %v, want /v1/leases", m["route"])
	}
	for _, l := range held[1:] {
		few.release(l)
	}
	for range 2 {
		if r := <-waiting; r.Status != http.StatusCreated {
			t.Fatalf("a waiting call: %d %s", r.Status, r.Body)
		}
	}
}

// TestMaxHoldOverHTTP: a holder that keeps renewing is refused once it has
// held its resource for the resource's max_hold: 404, saying why, and the
// next holder, waiting all along, gets the lock; a TTL longer than the
// bound is a bad request.
func TestMaxHoldOverHTTP(t *testing.T) {
	h := newHarness(t, strings.Replace(demoPolicy(t, "monotonic"), "compare: monotonic", "compare: monotonic\n    max_hold: 2s", 1))
	if _, r := h.acquire("account/acct-70", 5, 0); r.Status != http.StatusBadRequest || !strings.Contains(r.Problem.Detail, "max_hold") {
		t.Fatalf("a TTL past max_hold: %d %s, want 400 naming max_hold", r.Status, r.Body)
	}
	l := h.mustAcquire("account/acct-70", 1, 0)
	type grant struct {
		l lease
		r response
	}
	next := make(chan grant, 1)
	go func() {
		l, r := h.acquire("account/acct-70", 1, 30)
		next <- grant{l, r}
	}()
	var last response
	if !testenv.WaitFor(20*time.Second, func() bool {
		last = h.do(http.MethodPost, "/v1/leases/"+l.ID+"/keepalive", nil, "")
		return last.Status != http.StatusOK
	}) {
		t.Fatal("the holder kept renewing past its max_hold")
	}
	if last.Status != http.StatusNotFound || !strings.Contains(last.Problem.Detail, "max_hold") {
		t.Fatalf("a keepalive past max_hold: %d %s, want 404 saying why", last.Status, last.Body)
	}
	g := <-next
	if g.r.Status != http.StatusCreated {
		t.Fatalf("the next holder: %d %s", g.r.Status, g.r.Body)
	}
	n := g.l
	defer h.release(n)
	if mustToken(t, n.Token).Compare(mustToken(t, l.Token)) <= 0 {
		t.Fatalf("the next holder's token %s is not newer than %s", n.Token, l.Token)
	}
}

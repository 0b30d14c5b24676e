package gateway_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway"
)

// lineWriter hands each log line written to it to a channel.
type lineWriter chan map[string]any

func (lw lineWriter) Write(b []byte) (int, error) {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err == nil {
		lw <- m
	}
	return len(b), nil
}

// accessLine waits for the access log line of the request with id.
func accessLine(t *testing.T, lines lineWriter, id string) map[string]any {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m := <-lines:
			if m["msg"] == "request" && m["request_id"] == id {
				return m
			}
		case <-deadline:
			t.Fatalf("no access log line for request %s", id)
		}
	}
}

// TestAccessLogAndRequestIDs: every answer carries X-Request-Id; a
// problem names it as its instance; one log line per request says what
// happened, with the route's pattern, the duration as text and, for a
// refusal, the problem type and its cause.
func TestAccessLogAndRequestIDs(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	lines := make(lineWriter, 1024)
	gw := h.sibling(func(c *gateway.Config) { c.Logger = slog.New(slog.NewJSONHandler(lines, nil)) })

	l := h.mustAcquire("account/acct-1", 30, 0)
	ok := gw.write("debit", l.Token, debit("acct-1", 5))
	if ok.Status != http.StatusOK {
		t.Fatalf("debit: %d %s", ok.Status, ok.Body)
	}
	id := ok.Header.Get(gateway.RequestIDHeader)
	if id == "" {
		t.Fatal("no X-Request-Id on an accepted write")
	}
	m := accessLine(t, lines, id)
	want := map[string]any{"method": "POST", "route": "/v1/ops/{operation}", "status": float64(200), "operation": "debit",
		"resource": "account/acct-1", "presented_token": l.Plain, "outcome": "ok", "level": "INFO"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("access line %s = %v, want %v (line %v)", k, m[k], v, m)
		}
	}
	if d, err := time.ParseDuration(m["duration"].(string)); err != nil || d <= 0 {
		t.Errorf("duration %v: want text such as 1.5ms", m["duration"])
	}

	h.release(l)
	l2 := h.mustAcquire("account/acct-1", 30, 0)
	if r := gw.write("debit", l2.Token, debit("acct-1", 1)); r.Status != http.StatusOK {
		t.Fatalf("debit with the newer token: %d %s", r.Status, r.Body)
	}
	before := h.state()
	stale := gw.write("debit", l.Token, debit("acct-1", 5))
	if stale.Status != http.StatusConflict {
		t.Fatalf("stale debit: %d %s", stale.Status, stale.Body)
	}
	id = stale.Header.Get(gateway.RequestIDHeader)
	if stale.Problem.Instance != "urn:fencegw:request:"+id {
		t.Errorf("problem instance %q, want the request id %q", stale.Problem.Instance, id)
	}
	for _, pkg := range []string{"fence:", "gateway:", "tokens:", "policy:", "authority:"} {
		if strings.Contains(stale.Problem.Detail, pkg) {
			t.Errorf("detail %q names the Go package %s", stale.Problem.Detail, pkg)
		}
	}
	m = accessLine(t, lines, id)
	if m["status"] != float64(409) || m["outcome"] != "stale-token" || !strings.Contains(m["error"].(string), "stale token") {
		t.Errorf("access line of a stale write: %v", m)
	}
	if after := h.state(); after != before {
		t.Errorf("a stale write changed the database: %s → %s", before, after)
	}
}

// TestRequestIDsDifferAcrossReplicas: two gateways behind one load
// balancer, or one restarted, never hand out the same request id, so a
// problem's instance names one log line; ids stay short and log-friendly.
func TestRequestIDsDifferAcrossReplicas(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	replicas := []*harness{h, h.sibling(), h.sibling()} // the third: as if the second restarted
	seen := map[string]int{}
	for i, gw := range replicas {
		for range 3 {
			for _, r := range []response{gw.do(http.MethodGet, "/livez", nil, ""), gw.do(http.MethodGet, "/v1/nothing", nil, "")} {
				id := r.Header.Get(gateway.RequestIDHeader)
				if len(id) == 0 || len(id) > 32 || strings.Trim(id, "0123456789abcdef-") != "" {
					t.Fatalf("request id %q: want up to 32 characters of [0-9a-f-]", id)
				}
				if j, dup := seen[id]; dup {
					t.Fatalf("request id %s given by gateway %d and gateway %d", id, j, i)
				}
				seen[id] = i
			}
		}
	}
}

// TestMethodNotAllowedSaysWhatIs: a 405 carries Allow (RFC 9110) and
// writes nothing.
func TestMethodNotAllowedSaysWhatIs(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	before := h.state()
	for _, tc := range []struct{ method, path, allow string }{
		{http.MethodPut, "/v1/ops/debit", "POST"},
		{http.MethodPost, "/livez", "GET, HEAD"},
		{http.MethodPost, "/v1/leases/abc", "PATCH, DELETE"},
		{http.MethodPut, "/v1/leases/a%2Fb", "PATCH, DELETE"},
		{http.MethodPut, "/v1/leases", "GET, HEAD, POST"},
	} {
		r := h.do(tc.method, tc.path, nil, debit("acct-1", 5))
		if r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d, Allow %q; want 405, Allow %q", tc.method, tc.path, r.Status, r.Header.Get("Allow"), tc.allow)
		}
	}
	if after := h.state(); after != before {
		t.Errorf("405s changed the database: %s → %s", before, after)
	}
}

// TestPublicDetail: problem details lose Go's package prefixes, and keep
// everything else, colons in tokens included.
func TestPublicDetail(t *testing.T) {
	for in, want := range map[string]string{
		"fence: stale token 1:4 for account/acct-1: the fence is at 1:6": "stale token 1:4 for account/acct-1: the fence is at 1:6",
		"gateway: bad request: lease request: ttl: want whole seconds":   "bad request: lease request: ttl: want whole seconds",
		"write 2: fence: precondition failed":                            "write 2: precondition failed",
		"no prefix here":                                                 "no prefix here",
	} {
		if got := gateway.PublicDetail(in); got != want {
			t.Errorf("PublicDetail(%q) = %q, want %q", in, got, want)
		}
	}
}

// blockedWriter blocks the first access log line written to it until
// release is closed, and hands its bytes to started; other lines pass.
type blockedWriter struct {
	started chan []byte
	once    sync.Once
	release chan struct{}
}

func (b *blockedWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"msg":"request"`)) {
		b.once.Do(func() {
			b.started <- bytes.Clone(p)
			<-b.release
		})
	}
	return len(p), nil
}

// TestAnswerBeforeAccessLog: an accepted write's answer reaches the client
// while its access log line is still being written (to stderr, in
// production), not after. The log writer here blocks until the client has
// its answer: were the answer sent only once the handler returned, the
// write below would never be answered.
func TestAnswerBeforeAccessLog(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	lw := &blockedWriter{started: make(chan []byte, 1), release: make(chan struct{})}
	defer func() {
		select {
		case <-lw.release:
		default:
			close(lw.release)
		}
	}()
	gw := h.sibling(func(c *gateway.Config) { c.Logger = slog.New(slog.NewJSONHandler(lw, nil)) })
	l := h.mustAcquire("account/acct-87", 30, 0)
	defer h.release(l)

	type answer struct {
		resp *http.Response
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, gw.base+"/v1/ops/debit", strings.NewReader(debit("acct-87", 5)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(gateway.TokenHeader, l.Token)
		resp, err := http.DefaultClient.Do(req)
		answered <- answer{resp, err}
	}()
	select {
	case a := <-answered:
		if a.err != nil {
			t.Fatal(a.err)
		}
		a.resp.Body.Close()
		if a.resp.StatusCode != http.StatusOK {
			t.Fatalf("debit: %s", a.resp.Status)
		}
		if a.resp.ContentLength <= 0 {
			t.Errorf("the answer went out without Content-Length (chunked): %v", a.resp.Header)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no answer while the access log line was being written")
	}
	select {
	case line := <-lw.started: // written, and still blocked, when the client had its answer
		if !bytes.Contains(line, []byte(`"operation":"debit"`)) {
			t.Errorf("the blocked line is not the write's: %s", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the write's access log line never came")
	}
}

// TestHugeNamesAreClippedWhereEchoed: a resource or an operation name of
// any length the client sends comes back clipped, in the problem document
// and in the access log line, not whole: one cheap request must not write
// a megabyte to the log.
func TestHugeNamesAreClippedWhereEchoed(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	lines := make(lineWriter, 1024)
	gw := h.sibling(func(c *gateway.Config) { c.Logger = slog.New(slog.NewJSONHandler(lines, nil)) })
	before := h.state()
	huge := strings.Repeat("a", 100_000)
	for _, c := range []struct {
		name, method, path string
		status             int
		field              func(gateway.Problem) string
		bound              int
	}{
		{"resource", http.MethodGet, "/v1/leases?resource=" + huge, http.StatusBadRequest, func(p gateway.Problem) string { return p.Resource }, 256},
		{"operation", http.MethodPost, "/v1/ops/" + huge[:60_000], http.StatusNotFound, func(p gateway.Problem) string { return p.Operation }, 64},
	} {
		r := gw.do(c.method, c.path, nil, "{}")
		echoed := c.field(r.Problem)
		if r.Status != c.status || !strings.HasPrefix(echoed, "aaaa") || len(echoed) > c.bound+len("…") {
			t.Errorf("%s: %d, echoed %d bytes; want %d and at most %d bytes", c.name, r.Status, len(echoed), c.status, c.bound)
		}
		line := accessLine(t, lines, r.Header.Get(gateway.RequestIDHeader))
		if b, _ := json.Marshal(line); len(b) > 2048 {
			t.Errorf("%s: access log line of %d bytes; want it short", c.name, len(b))
		}
	}
	// /metrics is served to GET (and HEAD) only.
	if r := gw.do(http.MethodPost, "/metrics", nil, ""); r.Status != http.StatusMethodNotAllowed || !strings.Contains(r.Header.Get("Allow"), "GET") {
		t.Errorf("POST /metrics: %d, Allow %q; want 405 naming GET", r.Status, r.Header.Get("Allow"))
	}
	if h.state() != before {
		t.Error("a refused request changed the database")
	}
}

// TestAccessLogNamesRoutesRefusedBeforeTheirHandler: a request refused on
// its way to a route's handler (authentication, a method the route does not
// serve) is logged under what the router matched, not as an unknown path.
func TestAccessLogNamesRoutesRefusedBeforeTheirHandler(t *testing.T) {
	h := newHarness(t, billingPolicy(t, "[debit, credit]"))
	lines := make(lineWriter, 1024)
	gw := h.sibling(func(c *gateway.Config) { c.Logger = slog.New(slog.NewJSONHandler(lines, nil)) })
	bearer := http.Header{"Authorization": {"Bearer billing-secret"}}
	before := h.state()
	for _, c := range []struct {
		method, path string
		header       http.Header
		status       int
		route        string
	}{
		{http.MethodPost, "/v1/ops/debit", nil, http.StatusUnauthorized, "/v1/*"},
		{http.MethodPut, "/v1/ops/debit", bearer, http.StatusMethodNotAllowed, "/v1/*"},
		{http.MethodGet, "/nowhere", nil, http.StatusNotFound, "(no route)"},
	} {
		r := gw.do(c.method, c.path, c.header, debit("acct-1", 1))
		if r.Status != c.status {
			t.Fatalf("%s %s: %d %s, want %d", c.method, c.path, r.Status, r.Body, c.status)
		}
		if m := accessLine(t, lines, r.Header.Get(gateway.RequestIDHeader)); m["route"] != c.route {
			t.Errorf("%s %s (%d) logs route %v, want %s", c.method, c.path, c.status, m["route"], c.route)
		}
	}
	if after := h.state(); after != before {
		t.Errorf("the refused writes changed the database: %s → %s", before, after)
	}
}

package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway"
)

// sseStream reads a watch stream's events.
type sseStream struct {
	t      *testing.T
	resp   *http.Response
	lines  chan string
	cancel context.CancelFunc
}

// sseEvent is one event as the stream sent it.
type sseEvent struct {
	ID, Event string
	Data      struct {
		Type     string `json:"type"`
		Resource string `json:"resource"`
		Revision int64  `json:"revision"`
		Holder   *struct {
			Token string `json:"token"`
			Value string `json:"value"`
		} `json:"holder"`
		Transitions int64 `json:"transitions"`
		Permit      int   `json:"permit"`
	}
	Comment string
}

// watch opens GET /v1/leases/watch?query with header; a stream on 200,
// else the answer.
func (h *harness) watch(query string, header http.Header) (*sseStream, response) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+"/v1/leases/watch?"+query, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer cancel()
		defer resp.Body.Close()
		r := response{Status: resp.StatusCode, Header: resp.Header}
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		r.Body = []byte(b.String())
		_ = json.Unmarshal(r.Body, &r.Problem)
		return nil, r
	}
	s := &sseStream{t: h.t, resp: resp, lines: make(chan string, 64), cancel: cancel}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	h.t.Cleanup(s.close)
	return s, response{Status: resp.StatusCode, Header: resp.Header}
}

func (s *sseStream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// next reads the next event or comment.
func (s *sseStream) next() sseEvent {
	s.t.Helper()
	var ev sseEvent
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatal("the stream ended")
			}
			switch {
			case line == "":
				return ev
			case strings.HasPrefix(line, ":"):
				ev.Comment = strings.TrimSpace(line[1:])
			case strings.HasPrefix(line, "id: "):
				ev.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.Event = line[7:]
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(line[6:]), &ev.Data); err != nil {
					s.t.Fatalf("data %q: %v", line, err)
				}
			}
		case <-time.After(30 * time.Second):
			s.t.Fatal("no event within 30 s")
		}
	}
}

// nextEvent skips comments.
func (s *sseStream) nextEvent() sseEvent {
	s.t.Helper()
	for {
		if ev := s.next(); ev.Comment == "" {
			return ev
		}
	}
}

func (ev sseEvent) String() string {
	s := fmt.Sprintf("%s %s #%d", ev.Event, ev.Data.Resource, ev.Data.Transitions)
	if ev.Data.Holder != nil {
		s += fmt.Sprintf(" %s=%q", ev.Data.Holder.Token, ev.Data.Holder.Value)
	}
	return s
}

func (s *sseStream) expect(want string) sseEvent {
	s.t.Helper()
	ev := s.nextEvent()
	if ev.String() != want {
		s.t.Fatalf("event: got %s, want %s", ev, want)
	}
	if ev.Event != ev.Data.Type {
		s.t.Fatalf("event %s carries type %s", ev.Event, ev.Data.Type)
	}
	return ev
}

// TestWatchOverHTTP: a watch stream sends the state, then each grant,
// value change and end with its revision as the event ID; a stream
// resumed with Last-Event-ID sends what came after; GET /v1/leases
// counts the transitions too.
func TestWatchOverHTTP(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const res = "account/acct-7061"
	s, r := h.watch("resource="+url.QueryEscape(res), nil)
	if ct := r.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	state := s.nextEvent()
	n := state.Data.Transitions // the package's tests share etcd: other runs may have locked it
	if state.Event != "state" || state.Data.Holder != nil || state.ID != "" {
		t.Fatalf("first event %s (id %q), want the state of a free lock, without id", state, state.ID)
	}
	synced := s.expect("synced  #0")
	if synced.ID == "" {
		t.Fatal("synced carries no id")
	}
	a := h.mustAcquire(res, 10, 0)
	s.expect(fmt.Sprintf("granted %s #%d %s=%q", res, n+1, a.Plain, ""))
	if r := h.do(http.MethodPatch, "/v1/leases/"+a.ID, nil, `{"value": "10.0.0.7:8080"}`); r.Status != http.StatusNoContent {
		t.Fatalf("PATCH: %d %s", r.Status, r.Body)
	}
	value := s.expect(fmt.Sprintf("value %s #%d %s=%q", res, n+1, a.Plain, "10.0.0.7:8080"))
	var st struct {
		Transitions int64 `json:"transitions"`
		Holder      struct {
			Value string `json:"value"`
		} `json:"holder"`
	}
	decodeJSON(t, h.do(http.MethodGet, "/v1/leases?resource="+url.QueryEscape(res), nil, "").Body, &st)
	if st.Transitions != n+1 || st.Holder.Value != "10.0.0.7:8080" {
		t.Fatalf("GET /v1/leases: %+v, want 1 transition and the new value", st)
	}
	h.release(a)
	s.expect(fmt.Sprintf("released %s #%d %s=%q", res, n+1, a.Plain, "10.0.0.7:8080"))
	b := h.mustAcquire(res, 10, 0)
	s.expect(fmt.Sprintf("granted %s #%d %s=%q", res, n+2, b.Plain, ""))
	h.release(b)
	s.close()

	// Resumed after the value change: the release and what followed.
	resumed, _ := h.watch("resource="+url.QueryEscape(res), http.Header{"Last-Event-Id": {value.ID}})
	resumed.expect(fmt.Sprintf("released %s #%d %s=%q", res, n+1, a.Plain, "10.0.0.7:8080"))
	resumed.expect(fmt.Sprintf("granted %s #%d %s=%q", res, n+2, b.Plain, ""))
	resumed.expect(fmt.Sprintf("released %s #%d %s=%q", res, n+2, b.Plain, ""))
}

// TestWatchPrefixAndHeartbeat: a prefix watch follows every resource
// under it; an idle stream gets heartbeat comments.
func TestWatchPrefixAndHeartbeat(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	h = h.sibling(func(c *gateway.Config) { c.WatchHeartbeat = 50 * time.Millisecond })
	s, _ := h.watch("prefix=account/acct-7062", nil)
	var synced sseEvent
	for synced.Event != "synced" {
		synced = s.nextEvent()
	}
	// Idle: heartbeats, and progress (an id alone) as etcd moves on.
	other := h.mustAcquire("account/acct-7065", 10, 0)
	h.release(other)
	var heartbeat, progress bool
	for !heartbeat || !progress {
		ev := s.next()
		switch {
		case ev.Comment == "heartbeat":
			heartbeat = true
		case ev.Comment == "progress" && ev.Event == "" && revisionOf(t, ev.ID) > revisionOf(t, synced.ID):
			progress = true
		case ev.Comment != "progress":
			t.Fatalf("idle stream: got %s, want heartbeats and progress", ev)
		}
	}
	a := h.mustAcquire("account/acct-70621", 10, 0)
	defer h.release(a)
	if ev := s.nextEvent(); ev.Event != "granted" || ev.Data.Resource != "account/acct-70621" {
		t.Fatalf("got %s, want acct-621 granted", ev)
	}
}

func revisionOf(t *testing.T, id string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		t.Fatalf("event id %q: %v", id, err)
	}
	return n
}

// TestWatchBadInput: a watch outside the client's scope, a bad query, a
// Last-Event-ID that is garbage or from the future, and a watch past the
// limit are refused, each with its reason, and none holds a stream.
func TestWatchBadInput(t *testing.T) {
	h := newHarness(t, billingPolicy(t, "[debit, credit]")+`
  scheduler:
    token_sha256: `+sha256Hex("scheduler-secret")+`
    operations: [open_account]
    leases: [job]
`)
	h = h.sibling(func(c *gateway.Config) { c.MaxWatches = 4 }) // a client's share: 1
	billing := http.Header{"Authorization": {"Bearer billing-secret"}}
	with := func(k, v string) http.Header {
		hd := billing.Clone()
		hd.Add(k, v)
		return hd
	}
	newest, err := h.auth.Revision(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, query string
		header      http.Header
		status      int
		kind        string
		detail      string
	}{
		{"another's lock-only name", "resource=job/nightly", billing, 403, "forbidden", "may not lease"},
		{"another's prefix", "prefix=job/", billing, 403, "forbidden", "may not follow"},
		{"an empty prefix", "prefix=", billing, 400, "bad-request", "empty"},
		{"every lock, without operations [\"*\"]", "all=true", billing, 403, "forbidden", "may not follow every lock"},
		{"all=false", "all=false", billing, 400, "bad-request", "the only value is true"},
		{"all and a prefix", "all=true&prefix=account/", billing, 400, "bad-request", "once"},
		{"no lock's name", "resource=ledger/1", billing, 400, "bad-request", "unknown lease name"},
		{"both", "resource=account/acct-1&prefix=account/", billing, 400, "bad-request", "once"},
		{"unknown parameter", "resource=account/acct-1&after=3", billing, 400, "bad-request", "after"},
		{"garbage Last-Event-ID", "resource=account/acct-1", with("Last-Event-ID", "abc"), 400, "bad-request", "Last-Event-ID"},
		{"signed Last-Event-ID", "resource=account/acct-1", with("Last-Event-ID", "+5"), 400, "bad-request", "Last-Event-ID"},
		{"zero Last-Event-ID", "resource=account/acct-1", with("Last-Event-ID", "0"), 400, "bad-request", "Last-Event-ID"},
		{"future Last-Event-ID", "resource=account/acct-1", with("Last-Event-ID", fmt.Sprint(newest+1_000_000)), 400, "bad-request", "not yet issued"},
		{"no credential", "resource=account/acct-1", nil, 401, "unauthorized", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, r := h.watch(tt.query, tt.header)
			if r.Status != tt.status || r.Problem.Kind() != tt.kind || !strings.Contains(r.Problem.Detail, tt.detail) {
				t.Fatalf("got %d %s, want %d %s naming %q", r.Status, r.Body, tt.status, tt.kind, tt.detail)
			}
		})
	}
	if m := metricsText(t, h.base); !strings.Contains(m, "fencegw_lease_watches 0") {
		t.Fatalf("after refusals, watches open:\n%s", grepLines(m, "fencegw_lease_watches"))
	}
	s, _ := h.watch("resource=account/acct-7063", billing)
	s.nextEvent()
	if _, r := h.watch("resource=account/acct-7063", billing); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("a second watch past the client's share: %d %s, want 503", r.Status, r.Body)
	}
}

// TestSetValueOnlyByTheHolderOverHTTP: PATCH /v1/leases/{id} of an
// unknown lease (a waiter's is refused alike: authority's
// TestSetValueOnlyByTheHolder), or with a bad body changes nothing.
func TestSetValueOnlyByTheHolderOverHTTP(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const res = "account/acct-7064"
	holder := h.mustAcquire(res, 10, 0)
	defer h.release(holder)
	before, err := h.auth.Observe(t.Context(), res)
	if err != nil {
		t.Fatal(err)
	}
	if r := h.do(http.MethodPatch, "/v1/leases/"+holder.ID, nil, `{"value": "first"}`); r.Status != http.StatusNoContent {
		t.Fatalf("PATCH by the holder: %d %s", r.Status, r.Body)
	}
	tests := []struct {
		name, id, body string
		status         int
		kind           string
	}{
		{"unknown lease", "7fffffff", `{"value": "x"}`, 404, "lease-not-found"},
		{"not a lease id", "0abc", `{"value": "x"}`, 400, "bad-request"},
		{"no value", holder.ID, `{}`, 400, "bad-request"},
		{"another key", holder.ID, `{"value": "x", "ttl": 3}`, 400, "bad-request"},
		{"not text", holder.ID, `{"value": 3}`, 400, "bad-request"},
		{"a NUL", holder.ID, `{"value": "a\u0000b"}`, 400, "bad-request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(http.MethodPatch, "/v1/leases/"+tt.id, nil, tt.body)
			if r.Status != tt.status || r.Problem.Kind() != tt.kind {
				t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, tt.status, tt.kind)
			}
		})
	}
	st, err := h.auth.Observe(t.Context(), res)
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder == nil || st.Holder.Value != "first" || st.Transitions != before.Transitions {
		t.Fatalf("after refused updates: %+v, want the holder's value first and %d transitions", st, before.Transitions)
	}
}

// TestWatchOutlivesTheServersReadTimeout: a stream stays open past the
// http.Server's ReadTimeout (fencegw serve sets one), and its per-write
// deadlines past the server's WriteTimeout: a stream lives as long as
// its client reads.
func TestWatchOutlivesTheServersReadTimeout(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	gw := h.sibling(func(c *gateway.Config) { c.WatchHeartbeat = 20 * time.Millisecond }).gw
	const readTimeout = 100 * time.Millisecond
	srv := httptest.NewUnstartedServer(gw.Handler())
	srv.Config.ReadTimeout = readTimeout
	srv.Config.WriteTimeout = readTimeout
	srv.Start()
	t.Cleanup(srv.Close)
	h = &harness{t: t, base: srv.URL, pool: h.pool, auth: h.auth, gw: gw, policy: h.policy}
	s, _ := h.watch("resource=account/acct-7066", nil)
	opened := time.Now()
	for time.Since(opened) < 10*readTimeout { // heartbeats keep coming, or next fails
		s.next()
	}
	a := h.mustAcquire("account/acct-7066", 10, 0)
	defer h.release(a)
	for ev := s.nextEvent(); ev.Event != "granted"; ev = s.nextEvent() {
	}
}

// TestWatchOfEveryLock: all=true follows locks of every name, for a client
// that may read the status (operations ["*"]); TestWatchBadInput refuses
// it to one that may not.
func TestWatchOfEveryLock(t *testing.T) {
	h := newHarness(t, billingPolicy(t, `["*"]`))
	billing := http.Header{"Authorization": {"Bearer billing-secret"}}
	s, _ := h.watch("all=true", billing)
	for ev := s.nextEvent(); ev.Event != "synced"; ev = s.nextEvent() {
		if ev.Event != "state" {
			t.Fatalf("before synced: %s, want states", ev)
		}
	}
	const res = "account/acct-7067"
	r := h.do(http.MethodPost, "/v1/leases", billing, `{"resource": "`+res+`", "ttl": 10}`)
	if r.Status != http.StatusCreated {
		t.Fatalf("lease: %d %s", r.Status, r.Body)
	}
	var l struct {
		ID string `json:"lease_id"`
	}
	decodeJSON(t, r.Body, &l)
	// The package's tests share etcd: others' changes may come between.
	for ev := s.nextEvent(); ev.Data.Resource != res || ev.Event != "granted"; ev = s.nextEvent() {
	}
	if r := h.do(http.MethodDelete, "/v1/leases/"+l.ID, billing, ""); r.Status != http.StatusNoContent {
		t.Fatalf("release: %d %s", r.Status, r.Body)
	}
	for ev := s.nextEvent(); ev.Data.Resource != res || ev.Event != "released"; ev = s.nextEvent() {
	}
}

package gateway_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencegw/fencegw"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// statusJSON is GET /v1/status as the page reads it.
type statusJSON struct {
	Version   string    `json:"version"`
	At        time.Time `json:"at"`
	Age       float64   `json:"age_seconds"`
	Authority struct {
		Epoch    int64  `json:"epoch"`
		Revision int64  `json:"etcd_revision"`
		Halted   bool   `json:"halted"`
		Reason   string `json:"reason"`
	} `json:"authority"`
	Sources struct {
		Postgres string `json:"postgres"`
		Etcd     string `json:"etcd"`
	} `json:"sources"`
	Fences []struct {
		Resource  string    `json:"resource"`
		Token     string    `json:"token"`
		Writes    int64     `json:"writes"`
		UpdatedAt time.Time `json:"updated_at"`
	} `json:"fences"`
	Locks          []statusLock      `json:"locks"`
	LocksTruncated bool              `json:"locks_truncated"`
	Rejections     []statusRejection `json:"rejections"`
	Bypasses       []json.RawMessage `json:"bypasses"`
	History        []struct {
		Resource string `json:"resource"`
		Event    string `json:"event"`
		Token    string `json:"token"`
	} `json:"history"`
	Rates struct {
		IntervalSeconds float64           `json:"interval_seconds"`
		Samples         []json.RawMessage `json:"samples"`
	} `json:"rates"`
}

type statusLock struct {
	Resource string `json:"resource"`
	Holder   string `json:"holder_token"`
	TTL      int64  `json:"ttl"`
	Waiters  int64  `json:"waiters"`
	Value    string `json:"value"`
}

type statusRejection struct {
	At        time.Time `json:"at"`
	Resource  string    `json:"resource"`
	Operation string    `json:"operation"`
	Reason    string    `json:"reason"`
	Presented string    `json:"presented"`
	Current   string    `json:"current"`
	Count     int64     `json:"count"`
	FirstAt   time.Time `json:"first_at"`
}

// status reads GET /v1/status, failing the test on anything but 200.
func (h *harness) status(header http.Header) statusJSON {
	h.t.Helper()
	r := h.do(http.MethodGet, "/v1/status", header, "")
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/json" {
		h.t.Fatalf("GET /v1/status: %d %s %s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	var v statusJSON
	decodeJSON(h.t, r.Body, &v)
	return v
}

// waitStatus polls GET /v1/status until cond holds (the audit is written
// off the request path, and the answer is shared for a second).
func (h *harness) waitStatus(what string, cond func(statusJSON) bool) statusJSON {
	h.t.Helper()
	var v statusJSON
	if !testenv.WaitFor(60*time.Second, func() bool { v = h.status(nil); return cond(v) }) {
		h.t.Fatalf("GET /v1/status never showed %s; last: %+v", what, v)
	}
	return v
}

// TestStatusNeedsTheAPIsBearerToken: with clients declared, the data is
// the API's and needs a client's bearer token; the page itself, holding
// none, does not.
func TestStatusNeedsTheAPIsBearerToken(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic")+`
clients:
  billing:
    token_sha256: `+sha256Hex("billing-secret")+`
    operations: ["*"]
  teller:
    token_sha256: `+sha256Hex("teller-secret")+`
    operations: [debit]
`)
	if r := h.do(http.MethodGet, "/v1/status", http.Header{"Authorization": {"Bearer teller-secret"}}, ""); r.Status != http.StatusForbidden || strings.Contains(string(r.Body), `"sources"`) {
		t.Errorf("GET /v1/status as a client of one operation: %d %s, want 403 and no status", r.Status, r.Body)
	}
	for name, hdr := range map[string]http.Header{
		"no bearer":    nil,
		"wrong bearer": {"Authorization": {"Bearer billing-secreT"}},
	} {
		r := h.do(http.MethodGet, "/v1/status", hdr, "")
		if r.Status != http.StatusUnauthorized || r.Problem.Kind() != "unauthorized" || strings.Contains(string(r.Body), `"sources"`) {
			t.Errorf("%s: GET /v1/status: %d %s, want 401 unauthorized and no status", name, r.Status, r.Body)
		}
	}
	if v := h.status(http.Header{"Authorization": {"Bearer billing-secret"}}); v.Sources.Postgres != "ok" || v.Sources.Etcd != "ok" {
		t.Errorf("with billing's token: sources %+v, want both ok", v.Sources)
	}

	page := h.do(http.MethodGet, "/status", nil, "")
	if page.Status != http.StatusOK || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(page.Body), "status/status.js") {
		t.Fatalf("GET /status: %d %s %.200s, want the HTML page", page.Status, page.Header.Get("Content-Type"), page.Body)
	}
	if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("GET /status: Content-Security-Policy %q, want scripts from the gateway only", csp)
	}
	if r := h.do(http.MethodGet, "/status/index.html", nil, ""); r.Status != http.StatusNotFound {
		t.Errorf("GET /status/index.html: %d, want 404: its relative links resolve from /status only", r.Status)
	}
	for _, tc := range []struct{ path, contentType string }{
		{"/status/status.js", "text/javascript"},
		{"/status/status.css", "text/css"},
	} {
		if r := h.do(http.MethodGet, tc.path, nil, ""); r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), tc.contentType) {
			t.Errorf("GET %s: %d %s, want 200 %s", tc.path, r.Status, r.Header.Get("Content-Type"), tc.contentType)
		}
	}
	for _, path := range []string{"/status/nothing.js", "/status/..%2fstatus.go", "/status/%2e%2e"} {
		if r := h.do(http.MethodGet, path, nil, ""); r.Status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, r.Status)
		}
	}
}

// TestStatusShowsFencesLocksAndRefusals: what a stale write leaves behind
// is in GET /v1/status: the fence it lost to, the lock held, its refusal.
func TestStatusShowsFencesLocksAndRefusals(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	runHistory(t, h.node)
	old, held := h.succession("account/acct-81", 60)
	defer h.release(held)
	if r := h.write("debit", held.Token, debit("acct-81", 1)); r.Status != http.StatusOK {
		t.Fatalf("debit with the newer token: %d %s", r.Status, r.Body)
	}
	if r := h.write("debit", old.Token, debit("acct-81", 1)); r.Status != http.StatusConflict {
		t.Fatalf("debit with the older token: %d %s, want 409", r.Status, r.Body)
	}

	// The lock history: the first holder's grant and release, newest first.
	h.waitStatus("the first holder in the lock history", func(v statusJSON) bool {
		var events []string
		for _, e := range v.History {
			if e.Resource == "account/acct-81" && e.Token == old.Plain {
				events = append(events, e.Event)
			}
		}
		return slices.Equal(events, []string{"released", "granted"})
	})
	v := h.waitStatus("the refusal", func(v statusJSON) bool {
		return slices.ContainsFunc(v.Rejections, func(r statusRejection) bool {
			return r.Resource == "account/acct-81" && r.Reason == "stale-token" && r.Operation == "debit" &&
				r.Presented == old.Plain && r.Current == held.Plain && r.Count == 1 && r.FirstAt.Equal(r.At)
		})
	})
	if v.Sources.Postgres != "ok" || v.Sources.Etcd != "ok" {
		t.Errorf("sources %+v, want both ok", v.Sources)
	}
	if v.Version != fencegw.Version() {
		t.Errorf("version %q, want VERSION's %q", v.Version, fencegw.Version())
	}
	if v.Authority.Epoch != h.auth.Epoch() || v.Authority.Halted || v.Authority.Revision < mustToken(t, held.Plain).Revision {
		t.Errorf("authority %+v, want epoch %d, in service, revision at least %s's", v.Authority, h.auth.Epoch(), held.Plain)
	}
	if len(v.Fences) == 0 || v.Fences[0].Resource != "account/acct-81" || v.Fences[0].Token != held.Plain || v.Fences[0].Writes != 1 {
		t.Errorf("fences %+v, want account/acct-81 at %s first, one write", v.Fences, held.Plain)
	}
	i := slices.IndexFunc(v.Locks, func(l statusLock) bool {
		return l.Resource == "account/acct-81"
	})
	if i < 0 {
		t.Fatalf("locks %+v: account/acct-81 missing", v.Locks)
	}
	if l := v.Locks[i]; l.Holder != held.Plain || l.TTL <= 0 || l.TTL > 60 || l.Waiters != 0 {
		t.Errorf("lock %+v, want holder %s (unsigned), a TTL of 1-60 s, no waiter", l, held.Plain)
	}
	if v.Bypasses == nil || v.Rates.IntervalSeconds <= 0 || v.Rates.Samples == nil {
		t.Errorf("bypasses %v, rates %+v: want an empty list and the chart's interval", v.Bypasses, v.Rates)
	}

	h.auth.Halt(&tokens.HaltedError{Reason: "etcd went back in time (test)"})
	defer h.auth.Resume(h.auth.Epoch(), h.auth.NewestRevision())
	h.waitStatus("the halt", func(v statusJSON) bool {
		return v.Authority.Halted && strings.Contains(v.Authority.Reason, "etcd went back in time (test)") &&
			strings.Contains(v.Authority.Reason, "fencegw epoch bump") && !strings.Contains(v.Authority.Reason, "tokens:")
	})
}

// TestStatusSaysWhichSourceIsDown: with PostgreSQL or etcd unreachable,
// GET /v1/status still answers, the other source's lists included, and
// names the one that is down without its connection details.
func TestStatusSaysWhichSourceIsDown(t *testing.T) {
	_, base := gatewayOn(t, "postgres://postgres@127.0.0.1:1/none?sslmode=disable")
	noPostgres := &harness{t: t, base: base}
	v := noPostgres.status(nil)
	if !strings.HasPrefix(v.Sources.Postgres, "unavailable") || v.Sources.Etcd != "ok" || v.Fences != nil || v.Rejections != nil || v.Locks == nil {
		t.Errorf("PostgreSQL down: sources %+v, fences %v, rejections %v, locks %v: want postgres unavailable, its lists null, the locks shown",
			v.Sources, v.Fences, v.Rejections, v.Locks)
	}
	if strings.Contains(v.Sources.Postgres, "127.0.0.1:1") || strings.Contains(v.Sources.Postgres, "dial") {
		t.Errorf("PostgreSQL down: %q shows connection details", v.Sources.Postgres)
	}

	h := newHarness(t, demoPolicy(t, "monotonic"))
	dead, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dead.Close() })
	_, base = gatewayWith(t, h.pool.Config().ConnString(), dead)
	noEtcd := &harness{t: t, base: base}
	v = noEtcd.status(nil)
	if !strings.HasPrefix(v.Sources.Etcd, "unavailable") || v.Sources.Postgres != "ok" || v.Locks != nil || v.Fences == nil {
		t.Errorf("etcd down: sources %+v, locks %v, fences %v: want etcd unavailable, locks null, the fences shown", v.Sources, v.Locks, v.Fences)
	}
}

// rateSampleJSON is one interval of GET /v1/status's chart.
type rateSampleJSON struct {
	Writes   float64 `json:"writes"`
	Refusals float64 `json:"refusals"`
}

// TestRefusalRateCountsFenceRefusals: the chart's refusal series counts
// writes the fence refused, not requests refused for what they are: a
// 404, a 401 and a malformed write leave it at zero; a stale write
// raises it.
func TestRefusalRateCountsFenceRefusals(t *testing.T) {
	h := newHarness(t, billingPolicy(t, `["*"]`))
	bearer := func(fencingToken string) http.Header {
		hdr := http.Header{"Authorization": {"Bearer billing-secret"}}
		if fencingToken != "" {
			hdr.Set("Fencing-Token", fencingToken)
		}
		return hdr
	}
	acquire := func() (id, token string) {
		r := h.do(http.MethodPost, "/v1/leases", bearer(""), `{"resource": "account/acct-83", "ttl": 60}`)
		var l struct {
			ID    string `json:"lease_id"`
			Token string `json:"token"`
		}
		if r.Status != http.StatusCreated {
			t.Fatalf("acquire: %d %s", r.Status, r.Body)
		}
		decodeJSON(t, r.Body, &l)
		return l.ID, l.Token
	}
	oldID, old := acquire()
	if r := h.do(http.MethodDelete, "/v1/leases/"+oldID, bearer(""), ""); r.Status != http.StatusNoContent {
		t.Fatalf("release: %d %s", r.Status, r.Body)
	}
	heldID, held := acquire()
	defer h.do(http.MethodDelete, "/v1/leases/"+heldID, bearer(""), "")

	start := time.Now()
	h.node.SampleRates(start, h.gw.WriteCounts)
	before := h.state()
	for _, tc := range []struct {
		name, path string
		header     http.Header
		body       string
		kind       string
	}{
		{"no such path", "/v1/nothing", bearer(held), debit("acct-83", 1), "not-found"},
		{"no such operation", "/v1/ops/drop_table", bearer(held), debit("acct-83", 1), "unknown-operation"},
		{"no bearer", "/v1/ops/debit", tok(held), debit("acct-83", 1), "unauthorized"},
		{"malformed JSON", "/v1/ops/debit", bearer(held), `{"account": `, "bad-request"},
	} {
		if r := h.do(http.MethodPost, tc.path, tc.header, tc.body); r.Problem.Kind() != tc.kind {
			t.Fatalf("%s: %d %s, want %s", tc.name, r.Status, r.Body, tc.kind)
		}
	}
	if after := h.state(); after != before {
		t.Fatalf("refused requests changed the database: %s -> %s", before, after)
	}
	h.node.SampleRates(start.Add(5*time.Second), h.gw.WriteCounts)

	if r := h.do(http.MethodPost, "/v1/ops/debit", bearer(held), debit("acct-83", 1)); r.Status != http.StatusOK {
		t.Fatalf("debit with the newer token: %d %s", r.Status, r.Body)
	}
	if r := h.do(http.MethodPost, "/v1/ops/debit", bearer(old), debit("acct-83", 1)); r.Problem.Kind() != "stale-token" {
		t.Fatalf("debit with the older token: %d %s, want stale-token", r.Status, r.Body)
	}
	h.node.SampleRates(start.Add(10*time.Second), h.gw.WriteCounts)

	var samples []rateSampleJSON
	ok := testenv.WaitFor(30*time.Second, func() bool {
		r := h.do(http.MethodGet, "/v1/status", bearer(""), "")
		var v statusJSON
		decodeJSON(t, r.Body, &v)
		samples = samples[:0]
		for _, raw := range v.Rates.Samples {
			var s rateSampleJSON
			decodeJSON(t, raw, &s)
			samples = append(samples, s)
		}
		return len(samples) == 2
	})
	if !ok {
		t.Fatalf("GET /v1/status: samples %+v, want the two intervals", samples)
	}
	if got := samples[0].Refusals; got != 0 {
		t.Errorf("refusals while only a 404, a 401 and a malformed write were refused: %g, want 0", got)
	}
	if got := samples[1].Refusals; got != 1 {
		t.Errorf("refusals in the interval of one stale write: %g, want 1", got)
	}
	if got := samples[1].Writes; got != 2 {
		t.Errorf("writes in the interval of an accepted and a stale write: %g, want 2", got)
	}
}

package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestProblemsCountedApart: fencegw_rejections_total counts only what the
// fence or the authority refused; a 404, a 405, a malformed request and
// a client that hung up are counted in their own metrics.
func TestProblemsCountedApart(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	old, cur := h.succession("account/acct-44", 60)
	defer h.release(cur)
	if r := h.write("credit", cur.Token, debit("acct-44", 1)); r.Status != http.StatusOK {
		t.Fatalf("credit: %d %s", r.Status, r.Body)
	}
	state := h.state()
	for _, c := range []struct {
		method, path, token, body string
		status                    int
	}{
		{http.MethodPost, "/v1/ops/credit", old.Token, debit("acct-44", 1), http.StatusConflict},        // stale-token
		{http.MethodPost, "/v1/ops/credit", "1:1", debit("acct-44", 1), http.StatusForbidden},           // token-rejected
		{http.MethodPost, "/v1/ops/credit", cur.Token, `{"account": 7}`, http.StatusBadRequest},         // bad-request
		{http.MethodGet, "/v2/nothing", "", "", http.StatusNotFound},                                    // not-found
		{http.MethodPut, "/v1/ops/credit", cur.Token, debit("acct-44", 1), http.StatusMethodNotAllowed}, // method-not-allowed
	} {
		hdr := http.Header{}
		if c.token != "" {
			hdr.Set("Fencing-Token", c.token)
		}
		if r := h.do(c.method, c.path, hdr, c.body); r.Status != c.status {
			t.Fatalf("%s %s: %d %s, want %d", c.method, c.path, r.Status, r.Body, c.status)
		}
	}

	// A lease wait its client gives up.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.base+"/v1/leases", strings.NewReader(`{"resource": "account/acct-44", "ttl": 5, "wait": 60}`))
	req.Header.Set("Content-Type", "application/json")
	gaveUp := make(chan struct{})
	go func() {
		defer close(gaveUp)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitOrFail(t, "the wait to queue", func() bool {
		st, err := h.auth.Observe(context.Background(), "account/acct-44")
		return err == nil && st.Waiting == 1
	})
	cancel()
	<-gaveUp

	var m string
	want := []string{
		`fencegw_rejections_total{reason="stale-token"} 1`, `fencegw_rejections_total{reason="token-rejected"} 1`,
		`fencegw_problems_total{kind="bad-request"} 1`,
		`fencegw_unrouted_total{kind="not-found"} 1`, `fencegw_unrouted_total{kind="method-not-allowed"} 1`,
		`fencegw_client_gone_total 1`,
	}
	if !testenv.WaitFor(10*time.Second, func() bool {
		m = metricsText(t, h.base)
		for _, w := range want {
			if !strings.Contains(m, w) {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("metrics lack some of %q:\n%s", want, grepLines(m, "fencegw_rejections_total", "fencegw_problems_total", "fencegw_unrouted_total", "fencegw_client_gone_total"))
	}
	for _, line := range strings.Split(m, "\n") {
		if strings.HasPrefix(line, "fencegw_rejections_total{") && !strings.Contains(line, "stale-token") && !strings.Contains(line, "token-rejected") && !strings.Contains(line, "token-retired") {
			t.Errorf("fencegw_rejections_total counts what the fence did not refuse: %s", line)
		}
	}
	if h.state() != state {
		t.Error("a refused request changed the database")
	}
}

func grepLines(text string, prefixes ...string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(line, p) {
				out = append(out, line)
			}
		}
	}
	return strings.Join(out, "\n")
}

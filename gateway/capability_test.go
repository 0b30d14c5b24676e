package gateway_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestTokensAreCapabilities is issue 7's reproduction: in the default
// validation, a number anyone can read is no token. A caller who reads the
// newest revision from /metrics, or the holder's place from GET
// /v1/leases, and presents it is refused (403) with nothing written, and
// the real holder's next write still goes through; a token of one
// account's lease does not write another account.
func TestTokensAreCapabilities(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const account, resource = "acct-75", "account/acct-75"
	holder := h.mustAcquire(resource, 10, 0)
	defer h.release(holder)
	if r := h.write("credit", holder.Token, debit(account, 1)); r.Status != http.StatusOK {
		t.Fatalf("the holder's write: %d %s", r.Status, r.Body)
	}

	var observed struct {
		Holder struct{ Token string }
	}
	decodeJSON(t, h.do(http.MethodGet, "/v1/leases?resource="+resource, nil, "").Body, &observed)
	guesses := map[string]string{
		"the revision in /metrics": fmt.Sprintf("1:%d", metric(t, h, "fencegw_etcd_revision")),
		"the observed holder":      observed.Holder.Token,
		"the holder's number":      holder.Plain,
	}
	other := h.mustAcquire("account/acct-76", 10, 0) // a real token, of another account
	defer h.release(other)
	guesses["another account's token"] = other.Token
	for name, guess := range guesses {
		before := h.state()
		r := h.write("debit", guess, debit(account, 500))
		if r.Status != http.StatusForbidden || r.Problem.Kind() != "token-rejected" {
			t.Errorf("%s (%s): %d %s, want 403 token-rejected", name, guess, r.Status, r.Body)
		}
		if strings.Contains(string(r.Body), holder.Token) {
			t.Errorf("%s: the refusal shows the holder's token: %s", name, r.Body)
		}
		if after := h.state(); after != before {
			t.Errorf("%s: a refused write changed state", name)
		}
	}
	if r := h.write("credit", holder.Token, debit(account, 1)); r.Status != http.StatusOK {
		t.Fatalf("the holder's next write: %d %s, want 200: nobody could push its fence", r.Status, r.Body)
	}
}

// metric reads one unlabelled value from the gateway's /metrics.
func metric(t *testing.T, h *harness, name string) int64 {
	t.Helper()
	r := h.do(http.MethodGet, "/metrics", nil, "")
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return int64(f)
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}

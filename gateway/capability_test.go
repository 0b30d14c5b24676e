package gateway_test

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway"

	"github.com/fencegw/fencegw/internal/harness/testenv"
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

// TestMalformedTokensKeepTheirSignatureSecret: a real token sent slightly
// wrong (quoted, with characters stuck on, in a dictionary with a
// parameter, padded in a batch) is refused as malformed, and neither the
// problem document nor the log repeats its signature: it is still good
// for its resource.
func TestMalformedTokensKeepTheirSignatureSecret(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	var logged testenv.Buffer
	gw := h.sibling(func(c *gateway.Config) { c.Logger = slog.New(slog.NewTextHandler(&logged, nil)) })
	const account = "acct-78"
	l := gw.mustAcquire("account/"+account, 10, 0)
	defer gw.release(l)
	sig := l.Token[strings.LastIndexByte(l.Token, ':')+1:]
	prefix := strings.TrimSuffix(l.Token, sig)
	// The signature in the standard base64 alphabet, or cut by a stray
	// character, is still the signature once mended.
	std := strings.NewReplacer("-", "+", "_", "/").Replace(sig)
	secrets := []string{sig, std, sig[:11], sig[11:], std[:11], std[11:]}
	leaks := func(text string) bool {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				return true
			}
		}
		return false
	}
	before := h.state()
	headers := []string{
		`"` + l.Token + `"`, l.Token + "==", "0" + l.Token, "+" + l.Token, l.Token + ":x", " x" + l.Token[1:],
		`from="` + l.Token + `";a=1, to="` + l.Token + `"`,
		prefix + sig[:11] + "." + sig[11:], prefix + sig[:11] + " " + sig[11:],
	}
	if std != sig { // a signature without - or _ reads the same in both alphabets
		headers = append(headers, prefix+std)
	}
	for _, header := range headers {
		r := gw.write("credit", header, debit(account, 1))
		if r.Status != http.StatusBadRequest && r.Status != http.StatusForbidden {
			t.Errorf("Fencing-Token %s: %d %s, want a refusal", header, r.Status, r.Body)
		}
		if leaks(string(r.Body)) {
			t.Errorf("Fencing-Token %s: the answer repeats the signature: %s", header, r.Body)
		}
	}
	batch := `{"writes": [{"operation": "credit", "args": {"account": "` + account + `", "amount_cents": 1}, "token": " ` + l.Token + `"}]}`
	if r := gw.do(http.MethodPost, "/v1/batch", nil, batch); r.Status != http.StatusBadRequest || strings.Contains(string(r.Body), sig) {
		t.Errorf("a padded token in a batch: %d %s, want 400 without the signature", r.Status, r.Body)
	}
	if after := h.state(); after != before {
		t.Fatal("a refused token changed state")
	}
	if leaks(logged.String()) {
		t.Fatalf("the log repeats the signature:\n%s", logged.String())
	}
	if !strings.Contains(logged.String(), "malformed") {
		t.Fatalf("the refusals were not logged at all, so the check above proves nothing:\n%s", logged.String())
	}
}

package gateway_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestCheckWithoutWriting is Chubby's CheckSequencer over HTTP: a holder
// asks whether its token is still current without writing. 200 while it
// is; 409 stale-token naming the fence once a successor wrote; the same
// refusals as a write for forged tokens and bad requests; nothing written.
func TestCheckWithoutWriting(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	a, b := h.succession("account/acct-51", 30)
	defer h.release(b)
	check := func(token, body string) response {
		hdr := http.Header{}
		if token != "" {
			hdr.Set("Fencing-Token", token)
		}
		return h.do(http.MethodPost, "/v1/fences/check", hdr, body)
	}
	one := `{"resource": "account/acct-51"}`
	if r := check(a.Token, one); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"token":"`+a.Plain+`","fence":null`) {
		t.Fatalf("A's check before anyone wrote: %d %s, want 200, the fence null", r.Status, r.Body)
	}
	if w := h.write("credit", b.Token, debit("acct-51", 1)); w.Status != http.StatusOK {
		t.Fatalf("B's credit: %d %s", w.Status, w.Body)
	}
	before := h.state()
	if r := check(a.Token, one); r.Status != http.StatusConflict || r.Problem.Kind() != "stale-token" || r.Problem.CurrentToken != b.Plain {
		t.Fatalf("A's check after B wrote: %d %s, want 409 stale-token naming %s", r.Status, r.Body, b.Plain)
	}
	if r := check(b.Token, one); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"fence":"`+b.Plain+`"`) {
		t.Fatalf("B's check: %d %s, want 200 with the fence", r.Status, r.Body)
	}
	for _, tc := range []struct {
		name, token, body, kind string
		status                  int
	}{
		{"no token", "", one, "token-required", http.StatusPreconditionRequired},
		{"another resource's token", b.Token, `{"resource": "account/acct-52"}`, "token-rejected", http.StatusForbidden},
		{"unsigned", b.Plain, one, "token-rejected", http.StatusForbidden},
		{"no such kind of resource", b.Token, `{"resource": "invoice/9"}`, "bad-request", http.StatusBadRequest},
		{"both forms", b.Token, `{"resource": "account/acct-51", "resources": {"a": "account/acct-51"}}`, "bad-request", http.StatusBadRequest},
		{"roles without a dictionary", b.Token, `{"resources": {"from": "account/acct-51"}}`, "bad-request", http.StatusBadRequest},
		{"a role twice", `a="` + b.Token + `"`, `{"resources": {"a": "account/acct-51", "a": "account/acct-51"}}`, "bad-request", http.StatusBadRequest},
		{"not JSON", b.Token, `resource=account/acct-51`, "bad-request", http.StatusBadRequest},
		{"trailing data", b.Token, one + `{}`, "bad-request", http.StatusBadRequest},
	} {
		if r := check(tc.token, tc.body); r.Status != tc.status || r.Problem.Kind() != tc.kind {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Status, r.Body, tc.status, tc.kind)
		}
	}
	if after := h.state(); after != before {
		t.Fatalf("checks changed the database: %s -> %s", before, after)
	}
}

// TestCheckOfSeveralResources: one token per role, each held to its own
// fence; the stale one is named by its role.
func TestCheckOfSeveralResources(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	from := h.mustAcquire("account/acct-53", 30, 0)
	oldTo, to := h.succession("account/acct-54", 30)
	defer h.release(from)
	defer h.release(to)
	if w := h.write("credit", to.Token, debit("acct-54", 1)); w.Status != http.StatusOK {
		t.Fatalf("credit: %d %s", w.Status, w.Body)
	}
	body := `{"resources": {"from": "account/acct-53", "to": "account/acct-54"}}`
	check := func(toToken string) response {
		return h.do(http.MethodPost, "/v1/fences/check", http.Header{"Fencing-Token": {`from="` + from.Token + `", to="` + toToken + `"`}}, body)
	}
	if r := check(to.Token); r.Status != http.StatusOK {
		t.Fatalf("both current: %d %s", r.Status, r.Body)
	}
	if r := check(oldTo.Token); r.Status != http.StatusConflict || r.Problem.Role != "to" || r.Problem.CurrentToken != to.Plain {
		t.Fatalf("to's token stale: %d %s, want 409 naming role to and %s", r.Status, r.Body, to.Plain)
	}
}

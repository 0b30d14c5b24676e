package gateway_test

import (
	"net/http"
	"strings"
	"testing"
)

// The bearer tokens are test values; the policy holds only their SHA-256.
func TestAuthentication(t *testing.T) {
	billing := sha256Hex("billing-secret")
	opener := sha256Hex("opener-secret")
	h := newHarness(t, demoPolicy(t, "monotonic")+`
clients:
  billing:
    token_sha256: `+billing+`
    operations: [debit, credit]
  opener:
    token_sha256: `+opener+`
    operations: [open_account]
  other:
    token_sha256: `+sha256Hex("other-secret")+`
    operations: [debit, credit]
`)
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

	r := h.do(http.MethodPost, "/v1/leases", nil, `{"resource": "account/acct-71", "ttl": 5}`)
	if r.Status != http.StatusUnauthorized || r.Problem.Kind() != "unauthorized" {
		t.Fatalf("lease without a bearer token: %d %s, want 401", r.Status, r.Body)
	}
	r = h.do(http.MethodPost, "/v1/leases", bearer("billing-secret"), `{"resource": "account/acct-71", "ttl": 5}`)
	if r.Status != http.StatusCreated {
		t.Fatalf("lease as billing: %d %s", r.Status, r.Body)
	}
	var l struct {
		LeaseID string `json:"lease_id"`
		Token   string `json:"token"`
	}
	decodeJSON(t, r.Body, &l)
	defer h.do(http.MethodDelete, "/v1/leases/"+l.LeaseID, bearer("billing-secret"), "")

	with := func(bearerTok string) http.Header {
		hdr := bearer(bearerTok)
		hdr.Set("Fencing-Token", l.Token)
		return hdr
	}
	tests := []struct {
		name   string
		header http.Header
		op     string
		body   string
		status int
		kind   string
	}{
		{"no bearer", tok(l.Token), "debit", debit("acct-71", 1), 401, "unauthorized"},
		{"wrong bearer", with("billing-secreT"), "debit", debit("acct-71", 1), 401, "unauthorized"},
		{"basic auth", http.Header{"Authorization": {"Basic YmlsbGluZzpzZWNyZXQ="}, "Fencing-Token": {l.Token}}, "debit", debit("acct-71", 1), 401, "unauthorized"},
		{"operation not allowed", with("opener-secret"), "debit", debit("acct-71", 1), 403, "forbidden"},
		{"another client's token", with("other-secret"), "debit", debit("acct-71", 1), 403, "token-rejected"},
		{"unknown operation", with("billing-secret"), "drop", debit("acct-71", 1), 404, "unknown-operation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := h.state()
			r := h.do(http.MethodPost, "/v1/ops/"+tt.op, tt.header, tt.body)
			if r.Status != tt.status || r.Problem.Kind() != tt.kind {
				t.Fatalf("%d %s, want %d %s", r.Status, r.Body, tt.status, tt.kind)
			}
			if tt.status == 401 && r.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if after := h.state(); after != before {
				t.Fatalf("refused request changed state: %s -> %s", before, after)
			}
		})
	}
	if r := h.do(http.MethodPost, "/v1/ops/debit", with("billing-secret"), debit("acct-71", 10)); r.Status != http.StatusOK {
		t.Fatalf("debit as billing: %d %s", r.Status, r.Body)
	}
	// A lease ID is not a capability: only the client that took the lease
	// renews or releases it, and to another client it is answered like a
	// lease that does not exist.
	unknown := h.do(http.MethodPost, "/v1/leases/7fffffffffffffff/keepalive", bearer("opener-secret"), "")
	for _, r := range []response{
		h.do(http.MethodPost, "/v1/leases/"+l.LeaseID+"/keepalive", bearer("opener-secret"), ""),
		h.do(http.MethodDelete, "/v1/leases/"+l.LeaseID, bearer("opener-secret"), ""),
	} {
		// The same document but for the instance, which names the request.
		r.Problem.Instance, unknown.Problem.Instance = "", ""
		if r.Status != http.StatusNotFound || r.Problem != unknown.Problem {
			t.Fatalf("billing's lease to opener: %d %s, want what an unknown lease gets: %d %s", r.Status, r.Body, unknown.Status, unknown.Body)
		}
	}
	// Observers see who holds the lock in the order, not its capability.
	if r := h.do(http.MethodGet, "/v1/leases?resource=account/acct-71", bearer("opener-secret"), ""); r.Status != http.StatusOK ||
		strings.Contains(string(r.Body), l.Token) || strings.Contains(string(r.Body), l.LeaseID) || !strings.Contains(string(r.Body), plain(t, l.Token)) {
		t.Fatalf("observed %s: want the holder's place (%s), not its token or lease ID", r.Body, plain(t, l.Token))
	}
	if r := h.do(http.MethodPost, "/v1/leases/"+l.LeaseID+"/keepalive", bearer("billing-secret"), ""); r.Status != http.StatusOK {
		t.Fatalf("keepalive by billing: %d %s", r.Status, r.Body)
	}
	if r := h.do(http.MethodGet, "/livez", nil, ""); r.Status != http.StatusOK {
		t.Fatalf("livez must not need a token: %d", r.Status)
	}
}

// billingPolicy is the demo policy with one client, billing, whose bearer
// token is "billing-secret" and who may call ops (a YAML list).
func billingPolicy(t *testing.T, ops string) string {
	return demoPolicy(t, "monotonic") + `
clients:
  billing:
    token_sha256: ` + sha256Hex("billing-secret") + `
    operations: ` + ops + `
`
}

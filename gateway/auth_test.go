package gateway_test

import (
	"net/http"
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
	// renews or releases it.
	if r := h.do(http.MethodPost, "/v1/leases/"+l.LeaseID+"/keepalive", bearer("opener-secret"), ""); r.Status != http.StatusForbidden {
		t.Fatalf("keepalive of billing's lease by opener: %d %s, want 403", r.Status, r.Body)
	}
	if r := h.do(http.MethodDelete, "/v1/leases/"+l.LeaseID, bearer("opener-secret"), ""); r.Status != http.StatusForbidden {
		t.Fatalf("release of billing's lease by opener: %d %s, want 403", r.Status, r.Body)
	}
	if r := h.do(http.MethodPost, "/v1/leases/"+l.LeaseID+"/keepalive", bearer("billing-secret"), ""); r.Status != http.StatusOK {
		t.Fatalf("keepalive by billing: %d %s", r.Status, r.Body)
	}
	if r := h.do(http.MethodGet, "/livez", nil, ""); r.Status != http.StatusOK {
		t.Fatalf("livez must not need a token: %d", r.Status)
	}
}

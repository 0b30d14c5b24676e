package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestLeaseNamesWithinThePolicy: POST /v1/leases takes only names the
// policy's templates produce (an operation's template from values it accepts, or a
// lock-only entry of leases:), each within its client's scope: the names
// the client's operations write and the entries its own leases: lists.
// A refused lease takes nothing: no lock key, no waiter, no row.
func TestLeaseNamesWithinThePolicy(t *testing.T) {
	h := newHarness(t, billingPolicy(t, "[debit, credit]")+`
  scheduler:
    token_sha256: `+sha256Hex("scheduler-secret")+`
    operations: [open_account]
    leases: [job]
`)
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	state := h.state()
	tests := []struct {
		name, client, resource string
		status                 int
		kind, detail           string
	}{
		{"no key's literals", "billing-secret", "ledger/acct-1", 400, "bad-request", "account/{account}"},
		{"a value the operations refuse", "billing-secret", "account/zzz", 400, "bad-request", "leases:"},
		{"a value too long", "billing-secret", "account/acct-" + strings.Repeat("1", 60), 400, "bad-request", "unknown lease name"},
		{"a lock-only name not listed", "billing-secret", "job/nightly", 403, "forbidden", "client billing may not lease"},
		{"a lock-only name, listed", "scheduler-secret", "job/nightly", 201, "", ""},
		{"an account, by its writer", "billing-secret", "account/acct-31", 201, "", ""},
		{"an account, by another writer of accounts", "scheduler-secret", "account/acct-32", 201, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(http.MethodPost, "/v1/leases", bearer(tt.client), `{"resource": "`+tt.resource+`", "ttl": 30}`)
			if r.Status != tt.status {
				t.Fatalf("lease %q: %d %s, want %d", tt.resource, r.Status, r.Body, tt.status)
			}
			if r.Status == http.StatusCreated {
				var l struct {
					LeaseID string `json:"lease_id"`
				}
				decodeJSON(t, r.Body, &l)
				h.do(http.MethodDelete, "/v1/leases/"+l.LeaseID, bearer(tt.client), "")
				return
			}
			if r.Problem.Kind() != tt.kind || !strings.Contains(r.Problem.Detail, tt.detail) || r.Problem.Resource != tt.resource {
				t.Fatalf("lease %q: %s, want %s naming %q and the resource", tt.resource, r.Body, tt.kind, tt.detail)
			}
			st, err := h.auth.Observe(context.Background(), tt.resource)
			if err != nil || st.Holder != nil || st.Waiting != 0 {
				t.Fatalf("after the refusal, %q is %+v, %v: want no holder, no waiter", tt.resource, st, err)
			}
		})
	}
	if h.state() != state {
		t.Error("a refused lease changed the database")
	}
}

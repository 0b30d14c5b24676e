package gateway_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestTwoAuthorizationHeadersAreRefused is issue 34's reproduction: a
// request with two Authorization headers was served as the first one's
// client, while a proxy in front may have read the second. Now it is
// refused (400) whichever of them is valid, authentication on or off,
// and nothing is done: no write applied, no lease taken.
func TestTwoAuthorizationHeadersAreRefused(t *testing.T) {
	withClients := demoPolicy(t, "monotonic") + `
clients:
  billing:
    token_sha256: ` + sha256Hex("billing-secret") + `
    operations: [debit, credit]
`
	for name, pol := range map[string]string{"clients declared": withClients, "authentication off": demoPolicy(t, "monotonic")} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, pol)
			good := http.Header{"Authorization": {"Bearer billing-secret"}}
			r := h.do(http.MethodPost, "/v1/leases", good, `{"resource": "account/acct-66", "ttl": 30}`)
			if r.Status != http.StatusCreated {
				t.Fatalf("lease: %d %s", r.Status, r.Body)
			}
			var l struct {
				ID    string `json:"lease_id"`
				Token string `json:"token"`
			}
			decodeJSON(t, r.Body, &l)
			defer h.do(http.MethodDelete, "/v1/leases/"+l.ID, good, "")
			for _, order := range [][]string{{"Bearer billing-secret", "Bearer nobody"}, {"Bearer nobody", "Bearer billing-secret"}} {
				before := h.state()
				hdr := http.Header{"Authorization": order, "Fencing-Token": {l.Token}}
				r := h.do(http.MethodPost, "/v1/ops/credit", hdr, debit("acct-66", 1))
				if r.Status != http.StatusBadRequest || r.Problem.Kind() != "bad-request" || !strings.Contains(r.Problem.Detail, "Authorization") {
					t.Errorf("a write with Authorization %q: %d %s, want 400 naming the header", order, r.Status, r.Body)
				}
				if h.state() != before {
					t.Errorf("a write with Authorization %q changed state", order)
				}
				r = h.do(http.MethodPost, "/v1/leases", http.Header{"Authorization": order}, `{"resource": "account/acct-67", "ttl": 30}`)
				if r.Status != http.StatusBadRequest {
					t.Errorf("a lease with Authorization %q: %d %s, want 400", order, r.Status, r.Body)
				}
			}
			r = h.do(http.MethodGet, "/v1/leases?resource=account/acct-67", good, "")
			if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"holder":null`) {
				t.Errorf("account/acct-67 after the refused leases: %d %s, want nobody holding it", r.Status, r.Body)
			}
		})
	}
}

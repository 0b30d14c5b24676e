package gateway_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestObserveWithinTheClientsScope: GET /v1/leases?resource=… answers a
// client only about a name it may lease, as the watch does: another's
// lock (its holder's value included) is 403 with a problem document, as
// the OpenAPI document says; where the policy declares no clients, anyone
// may observe.
func TestObserveWithinTheClientsScope(t *testing.T) {
	yaml := billingPolicy(t, "[debit, credit]") + `
  scheduler:
    token_sha256: ` + sha256Hex("scheduler-secret") + `
    operations: [open_account]
    leases: [job]
`
	router := openAPIRouter(t, yaml)
	h := newHarness(t, yaml)
	held := h.do(http.MethodPost, "/v1/leases", http.Header{"Authorization": {"Bearer scheduler-secret"}},
		`{"resource": "job/nightly", "ttl": 30, "value": "10.0.0.7:8080"}`)
	if held.Status != http.StatusCreated {
		t.Fatalf("the scheduler's lease: %d %s", held.Status, held.Body)
	}
	for _, tt := range []struct {
		name, client, resource string
		status                 int
	}{
		{"another's lock-only name", "billing-secret", "job/nightly", http.StatusForbidden},
		{"its own lock-only name", "scheduler-secret", "job/nightly", http.StatusOK},
		{"an account it writes", "billing-secret", "account/acct-1", http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := "/v1/leases?resource=" + url.QueryEscape(tt.resource)
			header := http.Header{"Authorization": {"Bearer " + tt.client}}
			r := h.do(http.MethodGet, path, header, "")
			if r.Status != tt.status {
				t.Fatalf("GET %s as %s: %d %s; want %d", path, tt.client, r.Status, r.Body, tt.status)
			}
			if tt.status == http.StatusForbidden {
				if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" || r.Problem.Kind() != "forbidden" || r.Problem.Resource != tt.resource {
					t.Errorf("refusal: %s %s; want a forbidden problem document naming %s", ct, r.Body, tt.resource)
				}
				if strings.Contains(string(r.Body), "10.0.0.7") {
					t.Errorf("the refusal shows the holder's value: %s", r.Body)
				}
			}
			req, _ := http.NewRequest(http.MethodGet, h.base+path, nil)
			req.Header = header
			checkAnswer(t, router, req, r)
		})
	}

	open := newHarness(t, demoPolicy(t, "monotonic"))
	if r := open.do(http.MethodGet, "/v1/leases?resource=job/nightly", nil, ""); r.Status != http.StatusOK {
		t.Errorf("GET of job/nightly with no clients declared: %d %s; want 200", r.Status, r.Body)
	}
}

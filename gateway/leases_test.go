package gateway_test

import (
	"net/http"
	"testing"
)

func TestLeaseLifecycleOverHTTP(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const resource = "account/acct-51"
	a := h.mustAcquire(resource, 5, 0)
	if a.Resource != resource || a.TTL < 5 || a.ID == "" {
		t.Fatalf("lease = %+v", a)
	}
	_, r := h.acquire(resource, 5, 0)
	if r.Status != http.StatusConflict || r.Problem.Kind() != "locked" || r.Problem.CurrentToken != a.Token {
		t.Fatalf("second acquire: %d %s, want 409 locked with current_token %s", r.Status, r.Body, a.Token)
	}
	if r := h.do(http.MethodPost, "/v1/leases/"+a.ID+"/keepalive", nil, ""); r.Status != http.StatusOK {
		t.Fatalf("keepalive: %d %s", r.Status, r.Body)
	}
	h.release(a)
	if r := h.do(http.MethodPost, "/v1/leases/"+a.ID+"/keepalive", nil, ""); r.Status != http.StatusNotFound || r.Problem.Kind() != "lease-not-found" {
		t.Fatalf("keepalive after release: %d %s, want 404 lease-not-found", r.Status, r.Body)
	}
	if r := h.do(http.MethodDelete, "/v1/leases/"+a.ID, nil, ""); r.Status != http.StatusNotFound {
		t.Fatalf("second release: %d %s, want 404", r.Status, r.Body)
	}
	b := h.mustAcquire(resource, 5, 0)
	if mustToken(t, b.Token).Compare(mustToken(t, a.Token)) <= 0 {
		t.Fatalf("token after release %s is not newer than %s", b.Token, a.Token)
	}
	h.release(b)
}

func TestLeaseRequestsValidated(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	tests := []struct {
		name, method, path, body string
		status                   int
		kind                     string
	}{
		{"unknown field", "POST", "/v1/leases", `{"resource": "r", "ttl": 5, "owner": "me"}`, 400, "bad-request"},
		{"ttl zero", "POST", "/v1/leases", `{"resource": "r", "ttl": 0}`, 400, "bad-request"},
		{"ttl too long", "POST", "/v1/leases", `{"resource": "r", "ttl": 86400}`, 400, "bad-request"},
		{"ttl not integer", "POST", "/v1/leases", `{"resource": "r", "ttl": 1.5}`, 400, "bad-request"},
		{"wait negative", "POST", "/v1/leases", `{"resource": "r", "wait": -1}`, 400, "bad-request"},
		{"wait too long", "POST", "/v1/leases", `{"resource": "r", "wait": 3600}`, 400, "bad-request"},
		{"no resource", "POST", "/v1/leases", `{"ttl": 5}`, 400, "bad-request"},
		{"resource with newline", "POST", "/v1/leases", `{"resource": "a\nb"}`, 400, "bad-request"},
		{"not JSON", "POST", "/v1/leases", `resource=r`, 400, "bad-request"},
		{"trailing data", "POST", "/v1/leases", `{"resource": "r"} {}`, 400, "bad-request"},
		{"bad lease id", "POST", "/v1/leases/zz-top/keepalive", ``, 404, "lease-not-found"},
		{"negative lease id", "DELETE", "/v1/leases/-5", ``, 404, "lease-not-found"},
		{"unknown path", "GET", "/v2/nothing", ``, 404, "not-found"},
		{"wrong method", "GET", "/v1/ops/debit", ``, 405, "method-not-allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(tt.method, tt.path, nil, tt.body)
			if r.Status != tt.status || r.Problem.Kind() != tt.kind {
				t.Fatalf("%s %s %s: %d %s, want %d %s", tt.method, tt.path, tt.body, r.Status, r.Body, tt.status, tt.kind)
			}
		})
	}
}

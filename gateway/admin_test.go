package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/fence"
)

// advance asks h to advance resource's fence.
func (h *harness) advance(resource string, dryRun bool) (response, map[string]any) {
	h.t.Helper()
	r := h.do(http.MethodPost, "/v1/admin/fences/advance", nil, fmt.Sprintf(`{"resource": %q, "reason": "bad holder", "dry_run": %t}`, resource, dryRun))
	var out map[string]any
	if r.Status == http.StatusOK {
		decodeJSON(h.t, r.Body, &out)
	}
	return r, out
}

// TestFenceAdvanceCutsOffTheHolderNotTheWaiters: on both compare modes,
// with a lease waiting and without, the fence advance refuses the current
// holder's next write, while the waiter, once granted, and the next grant
// write as usual. The waiter's key is created right after the holder's,
// so the two tokens are adjacent revisions: a fence one below the waiter
// would let the holder write on a monotonic resource. It is recorded in
// the history with who and why.
func TestFenceAdvanceCutsOffTheHolderNotTheWaiters(t *testing.T) {
	for _, compare := range []string{"monotonic", "strict"} {
		t.Run(compare, func(t *testing.T) {
			const account, resource = "acct-25", "account/acct-25"
			h := newHarness(t, demoPolicy(t, compare))
			runHistory(t, h.node)
			holder := h.mustAcquire(resource, 30, 0)
			// On a strict resource, a first write would refuse the
			// holder's next by itself, its token being the waiter's less
			// one, and leave the advance nothing to do.
			if compare == "monotonic" {
				if r := h.write("credit", holder.Token, debit(account, 1)); r.Status != http.StatusOK {
					t.Fatalf("holder's first write: %d %s", r.Status, r.Body)
				}
			}
			granted := make(chan lease, 1)
			go func() { l, _ := h.acquire(resource, 30, 60); granted <- l }()
			h.waitWaiting(resource, 1)
			before := h.state()
			if r, out := h.advance(resource, true); r.Status != http.StatusOK || out["advanced"] != true || out["dry_run"] != true || h.state() != before {
				t.Fatalf("dry run: %d %s, state changed %t", r.Status, r.Body, h.state() != before)
			}
			// dry_run is in every answer (docs/api.md), false ones too: a
			// script that reads it must not take a missing key for either.
			r, out := h.advance(resource, false)
			if dryRun, ok := out["dry_run"]; r.Status != http.StatusOK || out["advanced"] != true || out["holder"] != holder.Plain || !ok || dryRun != false {
				t.Fatalf("advance: %d %s", r.Status, r.Body)
			}
			if r := h.write("credit", holder.Token, debit(account, 1)); r.Status != http.StatusConflict || r.Problem.Kind() != "stale-token" {
				t.Fatalf("holder's write after the advance: %d %s, want 409 stale-token", r.Status, r.Body)
			}
			h.release(holder)
			waiter := <-granted
			if waiter.Token == "" {
				t.Fatal("the waiter was not granted")
			}
			// The rule itself (docs/concepts.md): the fence is the waiter's
			// token where an equal token writes, the revision before it where
			// only a greater one does. Anything lower lets a holder whose
			// key was created just before the waiter's write on.
			want := mustToken(t, waiter.Plain)
			if compare == "strict" {
				want.Revision--
			}
			if out["fence"] != want.String() {
				t.Errorf("advanced to %v, want %s (waiter %s)", out["fence"], want, waiter.Plain)
			}
			for i := range 2 { // twice: a strict resource takes one write a token, but not less
				r := h.write("credit", waiter.Token, debit(account, 1))
				if ok := r.Status == http.StatusOK; ok != (i == 0 || compare == "monotonic") {
					t.Fatalf("waiter's write %d after the advance: %d %s", i, r.Status, r.Body)
				}
			}
			h.release(waiter)

			// Nobody waiting: the next grant writes.
			holder = h.mustAcquire(resource, 30, 0)
			if r, out := h.advance(resource, false); r.Status != http.StatusOK || out["advanced"] != true {
				t.Fatalf("advance: %d %s", r.Status, r.Body)
			}
			if r := h.write("credit", holder.Token, debit(account, 1)); r.Status != http.StatusConflict {
				t.Fatalf("holder's write after the advance: %d %s, want 409", r.Status, r.Body)
			}
			h.release(holder)
			next := h.mustAcquire(resource, 30, 0)
			defer h.release(next)
			if r := h.write("credit", next.Token, debit(account, 1)); r.Status != http.StatusOK {
				t.Fatalf("next holder's write: %d %s", r.Status, r.Body)
			}
			h.waitHistory(resource, func(es []fence.HistoryEvent) bool {
				n := 0
				for _, e := range es {
					if e.Event == fence.FenceAdvanced && e.Actor == "anonymous" && e.Reason == "bad holder" && e.Token != "" {
						n++
					}
				}
				return n == 2
			})
		})
	}
}

// waitWaiting polls until n leases wait for resource's lock.
func (h *harness) waitWaiting(resource string, n int64) {
	h.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := h.do(http.MethodGet, "/v1/leases?resource="+resource, nil, "")
		var st struct{ Waiting int64 }
		_ = json.Unmarshal(r.Body, &st)
		if st.Waiting == n {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: %d waiting, want %d: %s", resource, st.Waiting, n, r.Body)
		}
		time.Sleep(20 * time.Millisecond) // polling for a condition
	}
}

// TestRevokeByResource: the holder of a resource is revoked, whoever owns
// it; its lease is gone (its keepalive says so); a dry run before changed
// nothing.
func TestRevokeByResource(t *testing.T) {
	const resource = "account/acct-26"
	h := newHarness(t, demoPolicy(t, "monotonic"))
	l := h.mustAcquire(resource, 30, 0)
	body := `{"resource": "` + resource + `", "reason": "holder stuck", "dry_run": true}`
	r := h.do(http.MethodPost, "/v1/admin/leases/revoke", nil, body)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"lease_id":"`+l.ID+`"`) || !strings.Contains(string(r.Body), `"revoked":false`) {
		t.Fatalf("dry run: %d %s", r.Status, r.Body)
	}
	if r := h.do(http.MethodPost, "/v1/leases/"+l.ID+"/keepalive", nil, ""); r.Status != http.StatusOK {
		t.Fatalf("keepalive after a dry run: %d %s", r.Status, r.Body)
	}
	r = h.do(http.MethodPost, "/v1/admin/leases/revoke", nil, strings.Replace(body, "true", "false", 1))
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"revoked":true`) || !strings.Contains(string(r.Body), `"dry_run":false`) || strings.Contains(string(r.Body), l.Token) {
		t.Fatalf("revoke: %d %s (no signed token in it)", r.Status, r.Body)
	}
	if r := h.do(http.MethodPost, "/v1/leases/"+l.ID+"/keepalive", nil, ""); r.Status != http.StatusNotFound {
		t.Fatalf("keepalive after the revoke: %d %s, want 404", r.Status, r.Body)
	}
}

// TestOperatorVerbsRefuseBadInput: each refusal is specific and changes
// nothing: the lease still lives, the fences and tables are as they were.
func TestOperatorVerbsRefuseBadInput(t *testing.T) {
	const account, resource = "acct-27", "account/acct-27"
	pol := billingPolicy(t, "[debit, credit]") + `  ops:
    token_sha256: ` + sha256Hex("ops-secret") + `
    operations: ["*"]
`
	h := newHarness(t, pol)
	as := func(secret string) http.Header { return http.Header{"Authorization": {"Bearer " + secret}} }
	var l lease
	r := h.do(http.MethodPost, "/v1/leases", as("billing-secret"), `{"resource": "`+resource+`", "ttl": 30}`)
	if r.Status != http.StatusCreated {
		t.Fatalf("lease: %d %s", r.Status, r.Body)
	}
	decodeJSON(t, r.Body, &struct {
		ID    *string `json:"lease_id"`
		Token *string `json:"token"`
	}{&l.ID, &l.Token})
	tok := http.Header{"Authorization": {"Bearer billing-secret"}, "Fencing-Token": {l.Token}}
	if r := h.do(http.MethodPost, "/v1/ops/credit", tok, debit(account, 1)); r.Status != http.StatusOK {
		t.Fatalf("write: %d %s", r.Status, r.Body)
	}
	before := h.state()
	cases := []struct {
		name, who, path, body string
		status                int
		kind, detail          string
	}{
		{"not an operator: revoke", "billing-secret", "/v1/admin/leases/revoke", `{"resource": "` + resource + `", "reason": "x"}`, 403, "forbidden", `operations ["*"]`},
		{"not an operator: advance", "billing-secret", "/v1/admin/fences/advance", `{"resource": "` + resource + `", "reason": "x"}`, 403, "forbidden", `operations ["*"]`},
		{"no reason", "ops-secret", "/v1/admin/fences/advance", `{"resource": "` + resource + `"}`, 400, "bad-request", "reason is required"},
		{"blank reason", "ops-secret", "/v1/admin/leases/revoke", `{"resource": "` + resource + `", "reason": "  "}`, 400, "bad-request", "reason is required"},
		{"reason of two lines", "ops-secret", "/v1/admin/leases/revoke", `{"resource": "` + resource + `", "reason": "a\nb"}`, 400, "bad-request", "control characters"},
		{"no lock", "ops-secret", "/v1/admin/leases/revoke", `{"resource": "account/acct-28", "reason": "x"}`, 404, "no-lock", "no lock"},
		{"no such lease", "ops-secret", "/v1/admin/leases/revoke", `{"lease_id": "7fffffffffffffff", "reason": "x"}`, 404, "lease-not-found", ""},
		{"both resource and lease", "ops-secret", "/v1/admin/leases/revoke", `{"resource": "` + resource + `", "lease_id": "` + l.ID + `", "reason": "x"}`, 400, "bad-request", "one of them"},
		{"bad lease id", "ops-secret", "/v1/admin/leases/revoke", `{"lease_id": "ABC", "reason": "x"}`, 400, "bad-request", "not a lease id"},
		{"keep_fence not a boolean", "ops-secret", "/v1/admin/leases/revoke", `{"resource": "` + resource + `", "reason": "x", "keep_fence": "yes"}`, 400, "bad-request", "true or false"},
		{"keep_fence to advance", "ops-secret", "/v1/admin/fences/advance", `{"resource": "` + resource + `", "reason": "x", "keep_fence": true}`, 400, "bad-request", "unknown field"},
		{"unknown field", "ops-secret", "/v1/admin/fences/advance", `{"resource": "` + resource + `", "reason": "x", "force": true}`, 400, "bad-request", "unknown field"},
		{"lease_id to advance", "ops-secret", "/v1/admin/fences/advance", `{"lease_id": "` + l.ID + `", "reason": "x"}`, 400, "bad-request", "unknown field"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(http.MethodPost, c.path, as(c.who), c.body)
			if r.Status != c.status || r.Problem.Kind() != c.kind || !strings.Contains(r.Problem.Detail, c.detail) {
				t.Errorf("%d %s, want %d %s saying %q", r.Status, r.Body, c.status, c.kind, c.detail)
			}
			if got := h.state(); got != before {
				t.Errorf("state changed: %s, was %s", got, before)
			}
			if r := h.do(http.MethodPost, "/v1/leases/"+l.ID+"/keepalive", as("billing-secret"), ""); r.Status != http.StatusOK {
				t.Errorf("the lease is gone: %d %s", r.Status, r.Body)
			}
		})
	}
	// The operator may.
	if r := h.do(http.MethodPost, "/v1/admin/fences/advance", as("ops-secret"), `{"resource": "`+resource+`", "reason": "x"}`); r.Status != http.StatusOK {
		t.Fatalf("the operator's advance: %d %s", r.Status, r.Body)
	}
}

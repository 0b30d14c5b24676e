package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/gateway"
)

// revoke asks h to revoke the lease holding resource's lock, or lease id,
// with extra JSON fields; it returns the answer decoded.
func (h *harness) revoke(target, extra string) (response, revokeAnswer) {
	h.t.Helper()
	key := "resource"
	if _, err := authority.ParseLeaseID(target); err == nil {
		key = "lease_id" // its hex has no fixed length: etcd's IDs may start with a zero nibble
	}
	r := h.do(http.MethodPost, "/v1/admin/leases/revoke", nil, fmt.Sprintf(`{%q: %q, "reason": "holder wedged"%s}`, key, target, extra))
	var out revokeAnswer
	if r.Status == http.StatusOK {
		if err := json.Unmarshal(r.Body, &out); err != nil {
			h.t.Fatal(err)
		}
	}
	return r, out
}

type revokeAnswer struct {
	Revoked bool `json:"revoked"`
	Fence   *struct {
		Before, Fence string
		Advanced      bool
	} `json:"fence"`
}

// TestRevokeCutsTheHolderOff is issue 34's reproduction: an operator's
// revoke left the revoked holder writing (200) until a successor wrote,
// which reads as "cut off" to whoever ran it. Now, on both compare modes,
// the revoked holder's next write is refused (409 stale-token, nothing
// written), whether it had written before (its fence row moves) or not
// (a row is made), while the next holder writes as usual; a dry run
// changes nothing; keep_fence keeps the old behaviour. A fence advance of
// a resource never written cuts off its holder too, where it answered 404
// and left it writing.
func TestRevokeCutsTheHolderOff(t *testing.T) {
	for i, compare := range []string{"monotonic", "strict"} {
		t.Run(compare, func(t *testing.T) {
			h := newHarness(t, demoPolicy(t, compare))
			account := func(k int) (string, string) {
				a := fmt.Sprintf("acct-%d", 40+10*i+k)
				return a, "account/" + a
			}

			// A holder that wrote, a waiter behind it.
			acct, res := account(0)
			holder := h.mustAcquire(res, 30, 0)
			if r := h.write("credit", holder.Token, debit(acct, 1)); r.Status != http.StatusOK {
				t.Fatalf("holder's write: %d %s", r.Status, r.Body)
			}
			granted := make(chan lease, 1)
			go func() { l, _ := h.acquire(res, 30, 60); granted <- l }()
			h.waitWaiting(res, 1)
			// On a strict resource the holder's write spent its token: the
			// fence refuses it already, and stays.
			moves := compare == "monotonic"
			before := h.state()
			if r, out := h.revoke(res, `, "dry_run": true`); r.Status != http.StatusOK || out.Fence == nil || out.Fence.Advanced != moves || h.state() != before {
				t.Fatalf("dry run: %d %s, state changed %t", r.Status, r.Body, h.state() != before)
			}
			r, out := h.revoke(res, "")
			if r.Status != http.StatusOK || !out.Revoked || out.Fence == nil || out.Fence.Advanced != moves || out.Fence.Before != holder.Plain {
				t.Fatalf("revoke: %d %s", r.Status, r.Body)
			}
			before = h.state()
			if r := h.write("credit", holder.Token, debit(acct, 1)); r.Status != http.StatusConflict || r.Problem.Kind() != "stale-token" {
				t.Fatalf("the revoked holder's write: %d %s, want 409 stale-token", r.Status, r.Body)
			}
			if h.state() != before {
				t.Fatal("the revoked holder's refused write changed state")
			}
			waiter := <-granted
			if waiter.Token == "" {
				t.Fatal("the waiter was not granted")
			}
			if r := h.write("credit", waiter.Token, debit(acct, 1)); r.Status != http.StatusOK {
				t.Fatalf("the next holder's write: %d %s", r.Status, r.Body)
			}
			h.release(waiter)

			// A holder that never wrote: no fence row yet.
			acct, res = account(1)
			quiet := h.mustAcquire(res, 30, 0)
			if r, out := h.revoke(quiet.ID, ""); r.Status != http.StatusOK || out.Fence == nil || !out.Fence.Advanced {
				t.Fatalf("revoke by lease id: %d %s", r.Status, r.Body)
			}
			before = h.state()
			if r := h.write("credit", quiet.Token, debit(acct, 1)); r.Status != http.StatusConflict {
				t.Fatalf("the revoked holder's first write: %d %s, want 409", r.Status, r.Body)
			}
			if h.state() != before {
				t.Fatal("the revoked holder's refused write changed state")
			}

			// keep_fence: the lease goes, the token writes until a
			// successor does.
			acct, res = account(2)
			kept := h.mustAcquire(res, 30, 0)
			if r, out := h.revoke(res, `, "keep_fence": true`); r.Status != http.StatusOK || !out.Revoked || out.Fence != nil {
				t.Fatalf("revoke keeping the fence: %d %s", r.Status, r.Body)
			}
			if r := h.write("credit", kept.Token, debit(acct, 1)); r.Status != http.StatusOK {
				t.Fatalf("the holder revoked with keep_fence: %d %s, want 200", r.Status, r.Body)
			}

			// A fence advance of a resource never written cuts its holder
			// off.
			acct, res = account(3)
			unwritten := h.mustAcquire(res, 30, 0)
			defer h.release(unwritten)
			if r, out := h.advance(res, false); r.Status != http.StatusOK || out["advanced"] != true {
				t.Fatalf("advance of a resource never written: %d %s", r.Status, r.Body)
			}
			if r := h.write("credit", unwritten.Token, debit(acct, 1)); r.Status != http.StatusConflict {
				t.Fatalf("its holder's write after the advance: %d %s, want 409", r.Status, r.Body)
			}
		})
	}
}

// TestReleaseSaysItsTokenStillWrites: a release does not move the fence
// (docs/concepts.md says why), and its answer says so: under validation
// fence the released token writes until a successor writes, then it is
// refused.
func TestReleaseSaysItsTokenStillWrites(t *testing.T) {
	const account, resource = "acct-65", "account/acct-65"
	h := newHarness(t, demoPolicy(t, "monotonic"))
	l := h.mustAcquire(resource, 30, 0)
	r := h.do(http.MethodDelete, "/v1/leases/"+l.ID, nil, "")
	if r.Status != http.StatusNoContent || r.Header.Get(gateway.ReleasedHeader) != gateway.ReleasedTokenWrites {
		t.Fatalf("release: %d %s=%q, want 204 saying %q", r.Status, gateway.ReleasedHeader, r.Header.Get(gateway.ReleasedHeader), gateway.ReleasedTokenWrites)
	}
	if r := h.write("credit", l.Token, debit(account, 1)); r.Status != http.StatusOK {
		t.Fatalf("the released token before a successor writes: %d %s, want 200 as the answer said", r.Status, r.Body)
	}
	next := h.mustAcquire(resource, 30, 0)
	defer h.release(next)
	if r := h.write("credit", next.Token, debit(account, 1)); r.Status != http.StatusOK {
		t.Fatalf("the successor's write: %d %s", r.Status, r.Body)
	}
	if r := h.write("credit", l.Token, debit(account, 1)); r.Status != http.StatusConflict {
		t.Fatalf("the released token after its successor wrote: %d %s, want 409", r.Status, r.Body)
	}
}

package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestLeaseLostWithoutSuccessor: A's lease expires and nobody takes the
// lock. In holder mode A's late write is refused by the authority; in fence
// mode it is accepted, because no newer token has reached the fence. Both
// are documented: the fence refuses writes older than a successor's, holder
// mode also refuses writes from a lease that is merely gone.
func TestLeaseLostWithoutSuccessor(t *testing.T) {
	for _, tt := range []struct {
		validation string
		status     int
	}{
		{"holder", http.StatusForbidden},
		{"fence", http.StatusOK},
	} {
		t.Run(tt.validation, func(t *testing.T) {
			pol := strings.Replace(demoPolicy(t, "monotonic"), "compare: monotonic", "compare: monotonic\n    validation: "+tt.validation, 1)
			h := newHarness(t, pol)
			account := map[string]string{"holder": "acct-91", "fence": "acct-92"}[tt.validation]
			a := h.mustAcquire("account/"+account, 1, 0)
			if r := h.write("debit", a.Token, debit(account, 10)); r.Status != http.StatusOK {
				t.Fatalf("write while holding: %d %s", r.Status, r.Body)
			}
			// Watch without touching the lease: a keepalive would renew it.
			expired := testenv.WaitFor(10*time.Second, func() bool {
				r := h.do(http.MethodGet, "/v1/leases?resource=account/"+account, nil, "")
				return r.Status == http.StatusOK && strings.Contains(string(r.Body), `"holder":null`)
			})
			if !expired {
				t.Fatal("the lease never expired")
			}
			before := h.state()
			r := h.write("debit", a.Token, debit(account, 10))
			if r.Status != tt.status {
				t.Fatalf("write after expiry: %d %s, want %d", r.Status, r.Body, tt.status)
			}
			if tt.status != http.StatusOK {
				if r.Problem.Kind() != "token-rejected" || !strings.Contains(r.Problem.Detail, "no live holder") {
					t.Fatalf("problem %+v, want token-rejected naming the missing holder", r.Problem)
				}
				if after := h.state(); after != before {
					t.Fatal("refused write changed state")
				}
			}
		})
	}
}

// TestHolderModeBindsTokenToResource: with holder validation a token from
// the lock of one account cannot write another account.
func TestHolderModeBindsTokenToResource(t *testing.T) {
	pol := strings.Replace(demoPolicy(t, "monotonic"), "compare: monotonic", "compare: monotonic\n    validation: holder", 1)
	h := newHarness(t, pol)
	mine := h.mustAcquire("account/acct-93", 5, 0)
	defer h.release(mine)
	before := h.state()
	r := h.write("debit", mine.Token, debit("acct-94", 10))
	if r.Status != http.StatusForbidden || r.Problem.Kind() != "token-rejected" {
		t.Fatalf("write to another account: %d %s, want 403", r.Status, r.Body)
	}
	if after := h.state(); after != before {
		t.Fatal("refused write changed state")
	}
}

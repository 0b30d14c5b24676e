package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// TestFarFutureTokenNeverReachesTheFence is issue 34's reproduction: a
// token signed with a real key (one that leaked) for a revision far beyond
// anything etcd has issued, or an epoch above etcd's, is refused in every
// validation mode as a forgery (403 token-rejected, counted, audited), and
// never reaches the fence: the fence row and the accounts are unchanged,
// and the real holder's next write goes through. Before, under validation
// fence, it was applied and the resource was locked out until an epoch
// bump.
func TestFarFutureTokenNeverReachesTheFence(t *testing.T) {
	for i, mode := range []string{"fence", "holder", "revision"} {
		t.Run(mode, func(t *testing.T) {
			pol := strings.Replace(demoPolicy(t, "monotonic"), "compare: monotonic", "compare: monotonic\n    validation: "+mode, 1)
			h := newHarness(t, pol)
			account := fmt.Sprintf("acct-%d", 81+i)
			resource := "account/" + account
			holder := h.mustAcquire(resource, 30, 0)
			defer h.release(holder)
			if r := h.write("credit", holder.Token, debit(account, 1)); r.Status != http.StatusOK {
				t.Fatalf("the holder's write: %d %s", r.Status, r.Body)
			}
			fenceBefore := h.fence(resource)

			forged := map[string]tokens.Token{}
			for name, tok := range map[string]tokens.Token{
				"a far-future revision": {Epoch: tokens.DefaultEpoch, Revision: 999_999_999},
				"an epoch above etcd's": {Epoch: tokens.DefaultEpoch + 1, Revision: 1},
			} {
				signed, err := h.auth.Sign(t.Context(), tok, resource, "")
				if err != nil {
					t.Fatal(err)
				}
				forged[name] = signed
			}
			const rejectedMetric = `fencegw_rejections_total{reason="token-rejected"}`
			counted := metric(t, h, rejectedMetric)
			before := h.state()
			for name, tok := range forged {
				r := h.write("debit", tok.String(), debit(account, 500))
				if r.Status != http.StatusForbidden || r.Problem.Kind() != "token-rejected" {
					t.Errorf("%s: %d %s, want 403 token-rejected", name, r.Status, r.Body)
				}
			}
			if after := h.state(); after != before || h.fence(resource) != fenceBefore {
				t.Fatalf("a forged token changed state: fence %s -> %s", fenceBefore, h.fence(resource))
			}
			if got := metric(t, h, rejectedMetric); got != counted+int64(len(forged)) {
				t.Errorf("%s = %d, want %d: each forgery counted", rejectedMetric, got, counted+int64(len(forged)))
			}
			for _, tok := range forged {
				presented := tok.Unsigned().String()
				if !testenv.WaitFor(30*time.Second, func() bool {
					var n int
					err := h.pool.QueryRow(t.Context(), "SELECT count(*) FROM fencegw.rejections WHERE reason = 'token-rejected' AND presented = $1", presented).Scan(&n)
					return err == nil && n == 1
				}) {
					t.Errorf("the forgery %s is not in the audit", presented)
				}
			}
			if r := h.write("credit", holder.Token, debit(account, 1)); r.Status != http.StatusOK {
				t.Fatalf("the holder's next write: %d %s, want 200: no forgery moved its fence", r.Status, r.Body)
			}
		})
	}
}

package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestPruneTransitionsLeavesTokensAndFencing: the janitor's prune of
// transitions keys takes the counts of idle locks and keeps a held one's;
// a lock granted again after it counts from 1, its holder writes, and the
// token of the lock's earlier holder is still refused: the keys decide no
// token and no fence.
func TestPruneTransitionsLeavesTokensAndFencing(t *testing.T) {
	h := pruneHarness(t)
	const idle = 12
	var first lease
	for i := range idle {
		account := fmt.Sprintf("acct-%d", 30+i)
		l := h.mustAcquire("account/"+account, 30, 0)
		if r := h.write("debit", l.Token, debit(account, 1)); r.Status != http.StatusOK {
			t.Fatalf("debit %s: %d %s", account, r.Status, r.Body)
		}
		h.release(l)
		if i == 0 {
			first = l
		}
	}
	held := h.mustAcquire("account/acct-99", 30, 0)
	defer h.release(held)

	n, err := h.node.PruneTransitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != idle {
		t.Fatalf("pruned %d transitions keys, want the %d idle locks'", n, idle)
	}
	if got := transitionsOf(t, h, "account/acct-30"); got != 0 {
		t.Fatalf("an idle lock after the prune: %d transitions, want 0", got)
	}
	if got := transitionsOf(t, h, "account/acct-99"); got != 1 {
		t.Fatalf("the held lock after the prune: %d transitions, want 1", got)
	}
	if m := metricsText(t, h.base); !strings.Contains(m, fmt.Sprintf("fencegw_transitions_pruned_total %d", idle)) {
		t.Errorf("metrics: %s, want %d pruned", grepLines(m, "fencegw_transitions_pruned_total"), idle)
	}

	again := h.mustAcquire("account/acct-30", 30, 0)
	defer h.release(again)
	if got := transitionsOf(t, h, "account/acct-30"); got != 1 {
		t.Fatalf("granted again after the prune: %d transitions, want 1", got)
	}
	if r := h.write("debit", again.Token, debit("acct-30", 1)); r.Status != http.StatusOK {
		t.Fatalf("the new holder's debit: %d %s", r.Status, r.Body)
	}
	before := h.state()
	if r := h.write("debit", first.Token, debit("acct-30", 1)); r.Status != http.StatusConflict || r.Problem.Kind() != "stale-token" {
		t.Fatalf("the earlier holder's debit after the prune: %d %s, want 409 stale-token", r.Status, r.Body)
	}
	if after := h.state(); after != before {
		t.Fatalf("a refused write changed the database: %s -> %s", before, after)
	}
}

// transitionsOf is GET /v1/leases' count of resource's grants.
func transitionsOf(t *testing.T, h *harness, resource string) int64 {
	t.Helper()
	r := h.do(http.MethodGet, "/v1/leases?resource="+resource, nil, "")
	if r.Status != http.StatusOK {
		t.Fatalf("observe %s: %d %s", resource, r.Status, r.Body)
	}
	var st struct {
		Transitions int64 `json:"transitions"`
	}
	decodeJSON(t, r.Body, &st)
	return st.Transitions
}

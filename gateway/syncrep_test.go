package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestACancelledSyncRepWaitIsNotAcknowledged is issue 33's five steps, on
// a real primary with a synchronous standby behind one multi-host URL:
//
//  1. holder A writes and releases; B is granted the next token;
//  2. the standby stops; B's keyed write waits in COMMIT for it (SyncRep);
//  3. an operator cancels that wait (pg_cancel_backend): PostgreSQL
//     answers the COMMIT with a WARNING, committed locally only;
//  4. the primary dies and the standby is promoted: B's write is gone;
//  5. A writes with its old token.
//
// Were B told 200 at step 3, its acknowledged write would be lost and A's
// stale write applied after it. B is told 503 outcome unknown; its retry
// with the key then runs afresh on the promoted server, and A is refused.
func TestACancelledSyncRepWaitIsNotAcknowledged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rp := newReplicated(t, ctx, demoPolicy(t, "monotonic"), authority.NewEtcd(testenv.EtcdClient(t), testenv.KEK()))
	h, primary, standby, admin, pool := rp.harness, rp.primary, rp.standby, rp.admin, rp.pool

	// 1. A writes, releases; B is granted.
	resource := fmt.Sprintf("account/acct-%d", 1+time.Now().UnixNano()%90) // etcd is the package's, shared
	account := resource[len("account/"):]
	a, b := h.succession(resource, 60)
	// (A wrote before it released in the story; the order of the two
	// makes no difference to the fence.)
	if r := h.write("credit", a.Token, debit(account, 1)); r.Status != http.StatusOK {
		t.Fatalf("A's write: %d %s", r.Status, r.Body)
	}

	// 2. The standby stops; B's keyed write waits for it in COMMIT.
	if err := standby.Halt(); err != nil {
		t.Fatal(err)
	}
	keyed := http.Header{"Fencing-Token": {b.Token}, "Idempotency-Key": {`"b-1"`}}

	// 3. The wait is cancelled: committed on the primary alone.
	r := rp.sendCancellingSyncRep(ctx, "B's write", "/v1/ops/credit", keyed, debit(account, 10))
	if r.Status != http.StatusServiceUnavailable || r.Problem.Outcome != "unknown" {
		t.Fatalf("B's write, its synchronous replication cancelled: %d %s; want 503 outcome unknown, never an acknowledgement", r.Status, r.Body)
	}
	var onPrimary string
	if err := admin.QueryRow(ctx, "SELECT epoch || ':' || revision FROM fencegw.fences WHERE resource = $1", resource).Scan(&onPrimary); err != nil {
		t.Fatal(err)
	}
	if onPrimary != b.Plain {
		t.Fatalf("the primary's fence is %s, want B's %s: the commit happened there", onPrimary, b.Plain)
	}

	// 4. The primary dies before the standby has B's write; the standby
	// comes back and is promoted.
	primary.Kill()
	if err := standby.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	var got string
	waitUntil(t, "the promoted server to answer", func() bool {
		// The pool's first tries may meet its connections to the dead
		// primary, which it then drops.
		return pool.QueryRow(ctx, "SELECT coalesce((SELECT epoch || ':' || revision FROM fencegw.fences WHERE resource = $1), 'none')", resource).Scan(&got) == nil
	})
	if got != a.Plain {
		t.Fatalf("after the failover the fence is %s, want A's %s: the test lost no write and tested nothing", got, a.Plain)
	}

	// B, told unknown, finds out with its key: nothing of it survived,
	// so the retry runs afresh (the first tries may meet the pool's
	// connections to the dead primary: not applied, retried).
	var retry response
	waitUntil(t, "B's retry to be answered by the promoted server", func() bool {
		retry = h.do(http.MethodPost, "/v1/ops/credit", keyed, debit(account, 10))
		return retry.Status != http.StatusServiceUnavailable || retry.Problem.Outcome != "not-applied"
	})
	if retry.Status != http.StatusOK || retry.Header.Get("Idempotent-Replayed") == "true" {
		t.Fatalf("B's retry with its key: %d (replayed %q) %s; want 200 run afresh", retry.Status, retry.Header.Get("Idempotent-Replayed"), retry.Body)
	}

	// 5. A's late write is refused: the fence is B's again.
	if r := h.write("credit", a.Token, debit(account, 1)); r.Status != http.StatusConflict {
		t.Fatalf("A's write after B's retry: %d %s, want 409 stale", r.Status, r.Body)
	}
}

// waitUntil polls cond until it holds, failing the test after a bound
// generous enough for a loaded machine.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !testenv.WaitFor(60*time.Second, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/pgcluster"
	"github.com/fencegw/fencegw/schema"
)

// TestAReplayWaitsForTheStandby: a keyed write whose wait for the
// synchronous standby was cancelled is committed on the primary alone,
// and is answered 503 outcome unknown. Its client retries with the key
// while the standby is still down, as a client does: the key's stored 200
// is there to read, but is no more durable than the commit that stored
// it, and a failover now would lose it. So the replay waits for the
// standby as a commit does (its own commit, after the key's), and is
// answered 503 outcome unknown too when that wait is cancelled; once the
// standby is back, the retry is answered the stored 200. The torture's
// standby outages found this: a retry answered 200, replayed, then lost
// by the failover (issue 33 item 2).
func TestAReplayWaitsForTheStandby(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	primary, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = primary.Stop() })
	standby, err := primary.StartStandby(ctx, pgcluster.StandbyOptions{Name: "sync1", Synchronous: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = standby.Stop() })
	both := pgcluster.MultiHostURL("postgres", primary, standby)
	if err := schema.Up(both, schema.Gateway(), schema.Dir("../testdata/demo/migrations", "demo_schema_migrations")); err != nil {
		t.Fatal(err)
	}
	pool, err := fence.NewPool(ctx, both)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	h := &harness{t: t, pool: pool, auth: authority.NewEtcd(testenv.EtcdClient(t), testenv.KEK()), policy: demoPolicy(t, "monotonic")}
	h.gw, h.base = gatewayWithPool(t, pool, h.auth, h.policy)
	admin, err := pgx.Connect(ctx, primary.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	resource := fmt.Sprintf("account/acct-%d", 1+time.Now().UnixNano()%90) // etcd is the package's, shared
	account := resource[len("account/"):]
	_, b := h.succession(resource, 60)
	keyed := http.Header{"Fencing-Token": {b.Token}, "Idempotency-Key": {`"b-replay"`}}

	// send sends B's keyed write and cancels the wait for the standby
	// that answering it meets, the first found; it returns the answer.
	send := func(what string) response {
		answered := make(chan response, 1)
		go func() { answered <- h.do(http.MethodPost, "/v1/ops/credit", keyed, debit(account, 10)) }()
		for {
			select {
			case r := <-answered:
				return r // answered without waiting for the standby
			case <-time.After(10 * time.Millisecond):
			}
			var pid int
			if admin.QueryRow(ctx, "SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep' LIMIT 1").Scan(&pid) == nil {
				if _, err := admin.Exec(ctx, "SELECT pg_cancel_backend($1)", pid); err != nil {
					t.Fatal(err)
				}
				return <-answered
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: no answer and no wait for the standby", what)
			}
		}
	}

	if err := standby.Halt(); err != nil {
		t.Fatal(err)
	}
	if r := send("B's write"); r.Status != http.StatusServiceUnavailable || r.Problem.Outcome != "unknown" {
		t.Fatalf("B's write, its wait for the standby cancelled: %d %s; want 503 outcome unknown", r.Status, r.Body)
	}
	r := send("B's retry")
	if r.Status != http.StatusServiceUnavailable || r.Problem.Outcome != "unknown" {
		t.Fatalf("B's retry with its key, the standby still down: %d (replayed %q) %s; want 503 outcome unknown: "+
			"the stored answer is on the primary alone", r.Status, r.Header.Get("Idempotent-Replayed"), r.Body)
	}

	if err := standby.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	retry := h.do(http.MethodPost, "/v1/ops/credit", keyed, debit(account, 10))
	if retry.Status != http.StatusOK || retry.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("B's retry, the standby back: %d (replayed %q) %s; want the stored 200, replayed", retry.Status, retry.Header.Get("Idempotent-Replayed"), retry.Body)
	}
}

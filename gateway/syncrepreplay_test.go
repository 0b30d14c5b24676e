package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
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
	rp := newReplicated(t, ctx, demoPolicy(t, "monotonic"), authority.NewEtcd(testenv.EtcdClient(t), testenv.KEK()))
	h, standby := rp.harness, rp.standby
	resource := fmt.Sprintf("account/acct-%d", 1+time.Now().UnixNano()%90) // etcd is the package's, shared
	account := resource[len("account/"):]
	_, b := h.succession(resource, 60)
	keyed := http.Header{"Fencing-Token": {b.Token}, "Idempotency-Key": {`"b-replay"`}}

	send := func(what string) response {
		return rp.sendCancellingSyncRep(ctx, what, "/v1/ops/credit", keyed, debit(account, 10))
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

// TestASettledReplayWaitsForTheStandby is TestAReplayWaitsForTheStandby
// on the other path a keyed retry's stored answer is replayed by: the
// retry is not applied (here its holder check cannot reach etcd), so the
// gateway settles the key, waiting for an attempt in flight and replaying
// the key's answer if it has one (fencegw.settle_key). That answer is on
// the primary alone while the standby is down: the replay waits for the
// standby as a commit does, and is 503 outcome unknown when that wait is
// cancelled, never the stored 200.
func TestASettledReplayWaitsForTheStandby(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, cli := testenv.PrivateEtcd(t)
	holder := strings.Replace(demoPolicy(t, "monotonic"), "compare: monotonic", "compare: monotonic\n    validation: holder", 1)
	rp := newReplicated(t, ctx, holder, authority.NewEtcd(cli, testenv.KEK()))
	_, b := rp.succession("account/acct-7", 60)
	keyed := http.Header{"Fencing-Token": {b.Token}, "Idempotency-Key": {`"b-settled"`}}
	if err := rp.standby.Halt(); err != nil {
		t.Fatal(err)
	}
	if r := rp.sendCancellingSyncRep(ctx, "B's write", "/v1/ops/credit", keyed, debit("acct-7", 10)); r.Status != http.StatusServiceUnavailable || r.Problem.Outcome != "unknown" {
		t.Fatalf("B's write, its wait for the standby cancelled: %d %s; want 503 outcome unknown", r.Status, r.Body)
	}
	if err := srv.Close(); err != nil { // the retry's holder check fails: not applied, the key settled
		t.Fatal(err)
	}
	r := rp.sendCancellingSyncRep(ctx, "B's retry", "/v1/ops/credit", keyed, debit("acct-7", 10))
	if r.Status != http.StatusServiceUnavailable || r.Problem.Outcome != "unknown" || r.Header.Get("Idempotent-Replayed") == "true" {
		t.Fatalf("B's retry, etcd away and the standby down: %d (replayed %q) %s; want 503 outcome unknown: "+
			"the stored answer is on the primary alone", r.Status, r.Header.Get("Idempotent-Replayed"), r.Body)
	}
}

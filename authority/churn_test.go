package authority

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/devserver/etcdserver"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestAnAbandonedLeaseEndsUnderLeaderChurn: on a three-member etcd whose
// leadership moves every half TTL, each election renewing every lease to
// its full TTL, a lease whose holder is gone would live as long as the
// elections go on. With a replica's reaper running, the next contender is
// granted the lock. The time from the abandoned lease's grant to the next
// grant is logged, not asserted: docs/concepts.md states its bound, which
// TestReaperRevokesALeaseNobodyRenews proves on a clock the test moves.
func TestAnAbandonedLeaseEndsUnderLeaderChurn(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cluster, err := etcdserver.StartCluster(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Close() })
	cli, err := clientv3.New(clientv3.Config{Endpoints: cluster.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	a := NewEtcd(cli, testenv.KEK())
	const res, ttl = "account/acct-churn", 2 * time.Second
	abandoned, err := a.Acquire(ctx, res, AcquireOptions{TTL: ttl, Owner: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	granted := time.Now()

	// What makes this a test of the reaper: an election renews the
	// abandoned lease (its remaining TTL goes back up).
	before, err := cli.TimeToLive(ctx, clientv3.LeaseID(abandoned.ID))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if err := cluster.MoveLeader(ctx); err != nil {
			t.Fatal(err)
		}
		after, err := cli.TimeToLive(ctx, clientv3.LeaseID(abandoned.ID))
		if err != nil {
			t.Fatal(err)
		}
		if after.TTL > before.TTL || after.TTL == int64(ttl/time.Second) {
			break // renewed (a TTL read before any second passed is full already)
		}
		before = after
	}

	churn, stopChurn := context.WithCancel(ctx)
	defer stopChurn()
	churned := make(chan int)
	go func() {
		n := 0
		defer func() { churned <- n }()
		for {
			select {
			case <-churn.Done():
				return
			case <-time.After(ttl / 2):
			}
			if err := cluster.MoveLeader(churn); err == nil {
				n++
			}
		}
	}()
	reaping, stopReaping := context.WithCancel(ctx)
	defer stopReaping()
	go a.RunReaper(reaping, nil)

	next, err := a.Acquire(ctx, res, AcquireOptions{TTL: ttl, Owner: "next", Wait: time.Minute})
	took := time.Since(granted)
	stopChurn()
	elections := <-churned
	if errors.Is(err, context.DeadlineExceeded) || err != nil {
		t.Fatalf("the next contender, after %s and %d elections: %v", took.Round(time.Millisecond), elections, err)
	}
	if next.Token.Compare(abandoned.Token) <= 0 {
		t.Fatalf("the next holder's token %s is not after the abandoned one's %s", next.Token, abandoned.Token)
	}
	if elections == 0 {
		t.Fatal("no election happened while the lease was abandoned: the test tested nothing")
	}
	t.Logf("abandoned lease (TTL %s) ended and the next holder was granted %s after its grant, through %d elections",
		ttl, took.Round(time.Millisecond), elections)
}

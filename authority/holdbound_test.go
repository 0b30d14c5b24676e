package authority

import (
	"errors"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// manualClock is a wall clock the test moves.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func clocked(cli *clientv3.Client) (*Etcd, *manualClock) {
	clock := &manualClock{t: time.Now()}
	a := NewEtcd(cli, testenv.KEK())
	a.UseClock(clock.now)
	return a, clock
}

// held reports whether lease id still holds resource.
func held(t *testing.T, a *Etcd, resource string, l Lease) bool {
	t.Helper()
	h, ok, err := a.Holder(t.Context(), resource)
	if err != nil {
		t.Fatal(err)
	}
	return ok && h.Compare(l.Token) == 0
}

// TestMaxHoldCutsOffAHolderThatKeepsRenewing: a holder renewing past its
// resource's max_hold (a sidecar renewing for a wedged job) is refused at
// the next keepalive and its lease revoked at once; a TTL longer than the
// bound is refused at the start.
func TestMaxHoldCutsOffAHolderThatKeepsRenewing(t *testing.T) {
	a, clock := clocked(testenv.EtcdClient(t))
	const res = "account/acct-maxhold"
	if _, err := a.Acquire(t.Context(), res, AcquireOptions{TTL: 20 * time.Second, MaxHold: 10 * time.Second, Owner: "c"}); !errors.Is(err, ErrBadTTL) {
		t.Fatalf("a TTL past max_hold: %v, want ErrBadTTL", err)
	}
	l, err := a.Acquire(t.Context(), res, AcquireOptions{TTL: 5 * time.Second, MaxHold: 10 * time.Second, Owner: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.KeepAlive(t.Context(), l.ID, "c"); err != nil {
		t.Fatalf("a keepalive within max_hold: %v", err)
	}
	clock.advance(11 * time.Second)
	_, err = a.KeepAlive(t.Context(), l.ID, "c")
	if !errors.Is(err, ErrHeldTooLong) || !errors.Is(err, ErrLeaseNotFound) {
		t.Fatalf("a keepalive past max_hold: %v, want ErrHeldTooLong, a lost lease", err)
	}
	if held(t, a, res, l) {
		t.Fatal("the lease held past max_hold still holds the lock")
	}
}

// TestReaperRevokesALeaseNobodyRenews: etcd renews every lease to its full
// TTL at each leader election, so a lease whose holder is gone can outlive
// it by as long as elections keep coming. Here etcd's own renewals stand
// for the elections' (the lease is kept alive, no keepalive of the
// authority records it): once the Reaper has not seen a renewal through
// the authority for the lease's TTL and reapMargin, it revokes the lease;
// one renewed through it stays, and so does one within that bound.
func TestReaperRevokesALeaseNobodyRenews(t *testing.T) {
	cli := testenv.EtcdClient(t)
	a, clock := clocked(cli)
	opts := AcquireOptions{TTL: 5 * time.Second, Owner: "c"}
	abandoned, err := a.Acquire(t.Context(), "account/acct-reap-1", opts)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := a.Acquire(t.Context(), "account/acct-reap-2", opts)
	if err != nil {
		t.Fatal(err)
	}
	r := a.NewReaper()
	reaped := map[LeaseID]string{}
	reap := func() {
		t.Helper()
		if err := r.Reap(t.Context(), func(id LeaseID, why string) { reaped[id] = why }); err != nil {
			t.Fatal(err)
		}
	}
	reap()                                                                   // first sight of both grants
	for _, step := range []time.Duration{3 * time.Second, 3 * time.Second} { // 6 s: past the TTL, within its margin
		clock.advance(step)
		// An election: the lease lives on without its holder.
		if _, err := cli.KeepAliveOnce(t.Context(), clientv3.LeaseID(abandoned.ID)); err != nil {
			t.Fatal(err)
		}
		if _, err := a.KeepAlive(t.Context(), kept.ID, "c"); err != nil {
			t.Fatal(err)
		}
		reap()
		if len(reaped) != 0 {
			t.Fatalf("reaped %v within a TTL and reapMargin of the last renewal seen", reaped)
		}
	}
	clock.advance(reapMargin + 100*time.Millisecond) // 7.1 s since the grant; the kept lease renewed 1.1 s ago
	reap()
	if _, ok := reaped[abandoned.ID]; !ok || len(reaped) != 1 {
		t.Fatalf("reaped %v, want the abandoned lease only, its TTL and reapMargin past", reaped)
	}
	if held(t, a, "account/acct-reap-1", abandoned) {
		t.Fatal("the abandoned lease still holds its lock")
	}
	if !held(t, a, "account/acct-reap-2", kept) {
		t.Fatal("the lease renewed through the authority was reaped")
	}
}

// TestReaperTimesFromWhatItSaw: a Reaper that first sees a lease long
// after its last renewal (a replica that started since) gives it a whole
// TTL and reapMargin from then: it never revokes on another replica's
// clock.
func TestReaperTimesFromWhatItSaw(t *testing.T) {
	cli := testenv.EtcdClient(t)
	a, clock := clocked(cli)
	l, err := a.Acquire(t.Context(), "account/acct-reap-3", AcquireOptions{TTL: 5 * time.Second, Owner: "c"})
	if err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Hour) // the granting replica's clock, or a step of this one's
	r := a.NewReaper()
	revoked := false
	reap := func() {
		t.Helper()
		if err := r.Reap(t.Context(), func(id LeaseID, _ string) { revoked = revoked || id == l.ID }); err != nil {
			t.Fatal(err)
		}
	}
	reap()
	if revoked {
		t.Fatal("revoked at first sight")
	}
	clock.advance(5*time.Second + reapMargin + 100*time.Millisecond)
	reap()
	if !revoked {
		t.Fatal("not revoked a TTL and reapMargin after it was first seen unrenewed")
	}
}

package gateway_test

import (
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/testgw"
)

// TestHoldTimeIsObservedOnceAtReleaseOrExpiry: a lock's hold time is
// observed when it is released (through another replica) and when it
// expires, once, by the replica that granted it; a waiter whose wait ended
// without the lock held nothing.
func TestHoldTimeIsObservedOnceAtReleaseOrExpiry(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	other := h.sibling()
	testgw.Run(t, h.node.RunHoldTimes)
	testgw.Run(t, other.node.RunHoldTimes)
	count := func(hh *harness) int64 { return metric(t, hh, "fencegw_lease_hold_seconds_count") }
	waitCount := func(want int64) {
		t.Helper()
		if !testenv.WaitFor(30*time.Second, func() bool { return count(h) >= want }) {
			t.Fatalf("hold times observed: %d, want %d", count(h), want)
		}
	}

	released := h.mustAcquire("account/acct-90", 30, 0)
	// A waiter that gives up: its lease ends without ever holding the lock.
	if _, r := h.acquire("account/acct-90", 30, 0.2); r.Status != 409 {
		t.Fatalf("waiter: %d %s", r.Status, r.Body)
	}
	other.release(released) // any replica releases; the granting one measures
	waitCount(1)

	h.mustAcquire("account/acct-91", 1, 0) // and left to expire
	waitCount(2)
	// The expiry was observed after at least its TTL.
	if sum := metric(t, h, "fencegw_lease_hold_seconds_sum"); sum < 1 {
		t.Errorf("hold time sum %d s, want at least the expired lease's 1 s TTL", sum)
	}
	// A third event that is not a hold must not have been counted by the
	// time the expiry was: one more release settles it.
	third := h.mustAcquire("account/acct-92", 30, 0)
	h.release(third)
	waitCount(3)
	if n := count(h); n != 3 {
		t.Errorf("hold times observed: %d, want 3 (two releases and an expiry; the waiter held nothing)", n)
	}
	if n := count(other); n != 0 {
		t.Errorf("the replica that granted nothing observed %d hold times", n)
	}
}

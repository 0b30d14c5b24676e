package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/node"
)

// runHistory records nd's lock history until the test ends.
func runHistory(t *testing.T, nd *node.Node) {
	t.Cleanup(startHistory(t, nd))
}

// startHistory runs nd's lock history until the function it returns is
// called, which waits for it to stop.
func startHistory(t *testing.T, nd *node.Node) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); nd.RunHistory(ctx) }()
	// An end before the watch is set up would never be seen.
	select {
	case <-nd.HistoryWatching():
	case <-time.After(60 * time.Second):
		t.Fatal("the lock history's watch of etcd never started")
	}
	return func() { cancel(); <-done }
}

// history reads resource's lock history from h's database.
func (h *harness) history(resource string) []fence.HistoryEvent {
	h.t.Helper()
	es, err := fence.History(context.Background(), h.pool, resource, time.Time{}, 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	return es
}

// waitHistory polls resource's history until done says it is complete.
func (h *harness) waitHistory(resource string, done func([]fence.HistoryEvent) bool) []fence.HistoryEvent {
	h.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		es := h.history(resource)
		if done(es) {
			return es
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("history of %s never complete: %+v", resource, es)
		}
		time.Sleep(50 * time.Millisecond) // polling for a condition, not waiting out a window
	}
}

// endsOf maps each lease with a grant in es to its end events.
func endsOf(es []fence.HistoryEvent) (granted []string, ends map[string][]fence.HistoryEvent) {
	ends = map[string][]fence.HistoryEvent{}
	for _, e := range es {
		switch e.Event {
		case fence.Granted:
			granted = append(granted, e.LeaseID)
		case fence.Released, fence.Expired, fence.Revoked:
			ends[e.LeaseID] = append(ends[e.LeaseID], e)
		}
	}
	return granted, ends
}

// TestHistoryRecordsEveryLeaseWithItsEnd: after a run of grants,
// releases, an expiry and a revoke, with two replicas on one database
// each watching etcd, every lease appears granted once and ended once, as
// it ended; the expiry and the revoke are followed by the resource's
// lock-delay (their holders never said they were done), and the revoke
// by the fence advanced past its holder's token; the tokens are E:R,
// never signed.
func TestHistoryRecordsEveryLeaseWithItsEnd(t *testing.T) {
	const resource = "account/acct-24"
	pol := strings.Replace(demoPolicy(t, "monotonic"), "compare: monotonic", "compare: monotonic\n    lock_delay: 1s", 1)
	h := newHarness(t, pol)
	runHistory(t, h.node)
	runHistory(t, h.sibling().node) // a second replica sees every end too

	released := h.mustAcquire(resource, 10, 0)
	h.release(released)
	expired := h.mustAcquire(resource, 1, 0)
	// Granted once expired's lease ran out and its lock-delay passed.
	revoked := h.mustAcquire(resource, 10, 30)
	if r := h.do(http.MethodPost, "/v1/admin/leases/revoke", nil, `{"lease_id": "`+revoked.ID+`", "reason": "stuck in a test"}`); r.Status != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	last := h.mustAcquire(resource, 10, 30)
	h.release(last)

	want := map[string]string{released.ID: fence.Released, expired.ID: fence.Expired, revoked.ID: fence.Revoked, last.ID: fence.Released}
	tokens := map[string]string{released.ID: released.Plain, expired.ID: expired.Plain, revoked.ID: revoked.Plain, last.ID: last.Plain}
	cutOff := func(es []fence.HistoryEvent) (n int) {
		for _, e := range es {
			if e.Event == fence.FenceAdvanced && strings.Contains(e.Reason, revoked.ID) {
				n++
			}
		}
		return n
	}
	es := h.waitHistory(resource, func(es []fence.HistoryEvent) bool {
		granted, ends := endsOf(es)
		n := 0
		for _, id := range granted {
			if _, ok := want[id]; ok && len(ends[id]) > 0 {
				n++
			}
		}
		return n == len(want) && cutOff(es) > 0
	})
	granted, ends := endsOf(es)
	if len(granted) != len(want) {
		t.Errorf("grants recorded %v, want the %d leases once each", granted, len(want))
	}
	delayed := map[string]bool{}
	for _, e := range es {
		if e.Event == fence.LockDelayed {
			delayed[e.LeaseID] = true
		}
		// A fence advanced (the revoke cut its holder off) names the
		// fence, not a lease's token.
		if e.Token != "" && e.Event != fence.FenceAdvanced && e.Token != tokens[e.LeaseID] {
			t.Errorf("%s of %s has token %q, want %q (E:R, no signature)", e.Event, e.LeaseID, e.Token, tokens[e.LeaseID])
		}
	}
	if len(delayed) != 2 || !delayed[expired.ID] || !delayed[revoked.ID] {
		t.Errorf("lock-delay after leases %v, want after the expired %s and the revoked %s, not after a release", delayed, expired.ID, revoked.ID)
	}
	if n := cutOff(es); n != 1 {
		t.Errorf("fence advances recorded for the revoke: %d, want 1", n)
	}
	for id, how := range want {
		got := ends[id]
		if len(got) != 1 || got[0].Event != how {
			t.Errorf("lease %s ended %+v, want once, %s", id, got, how)
		}
	}
	if e := ends[revoked.ID]; len(e) == 1 && (e[0].Actor != "anonymous" || e[0].Reason != "stuck in a test") {
		t.Errorf("revoke recorded by %q for %q, want the operator and the reason", e[0].Actor, e[0].Reason)
	}
}

// TestHistoryResumesAfterAGap: the ends that came while no replica
// watched etcd (the history stopped, as in a restart of every gateway)
// are recorded once one watches again: it resumes after the history's
// cursor. A release and an expiry in the gap; the end before it is kept
// once.
func TestHistoryResumesAfterAGap(t *testing.T) {
	const resource = "account/acct-30"
	h := newHarness(t, demoPolicy(t, "monotonic"))
	stop := startHistory(t, h.node)
	before := h.mustAcquire(resource, 10, 0)
	h.release(before)
	h.waitHistory(resource, func(es []fence.HistoryEvent) bool {
		_, ends := endsOf(es)
		return len(ends[before.ID]) == 1
	})
	stop()

	released := h.mustAcquire(resource, 10, 0)
	h.release(released)
	expired := h.mustAcquire(resource, 30, 0)
	id, err := authority.ParseLeaseID(expired.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.EtcdClient(t).Revoke(t.Context(), clientv3.LeaseID(id)); err != nil { // etcd ends it unmarked: an expiry
		t.Fatal(err)
	}

	runHistory(t, h.node)
	want := map[string]string{before.ID: fence.Released, released.ID: fence.Released, expired.ID: fence.Expired}
	es := h.waitHistory(resource, func(es []fence.HistoryEvent) bool {
		_, ends := endsOf(es)
		for id := range want {
			if len(ends[id]) == 0 {
				return false
			}
		}
		return true
	})
	_, ends := endsOf(es)
	for id, how := range want {
		if got := ends[id]; len(got) != 1 || got[0].Event != how {
			t.Errorf("lease %s ended %+v, want once, %s", id, got, how)
		}
	}
}

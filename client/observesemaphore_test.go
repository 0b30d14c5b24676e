package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestObserveAndWatchASemaphoreFromTheClient: Observe of a semaphore
// carries its permits, each held slot and the line; Watch of it reports
// each slot's events with the permit, and a release hands the slot to
// the waiter.
func TestObserveAndWatchASemaphoreFromTheClient(t *testing.T) {
	c := client.New(newGateway(t, semaphorePolicy(t)))
	ctx := t.Context()
	const sem = "pool/p5"
	opts := func(value string, wait time.Duration) client.AcquireOptions {
		return client.AcquireOptions{TTL: 30 * time.Second, Wait: wait, Value: value, Permits: 2}
	}
	events, err := c.Watch(ctx, sem)
	if err != nil {
		t.Fatal(err)
	}
	next := func() client.WatchEvent { t.Helper(); return nextEvent(t, events) }
	base := map[int]int64{} // each slot's grants before: the package's tests share etcd
	for k := 1; k <= 2; k++ {
		ev := next()
		if ev.Type != "state" || ev.Permit != k || ev.Holder != nil {
			t.Fatalf("state %d: %+v; want slot %d free", k, ev, k)
		}
		base[k] = ev.Transitions
	}
	if ev := next(); ev.Type != "synced" {
		t.Fatalf("got %+v, want synced", ev)
	}
	a, err := c.Acquire(ctx, sem, opts("a", 0))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Acquire(ctx, sem, opts("b", 0))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release(context.Background())
	for _, l := range []*client.Lease{a, b} {
		if ev := next(); ev.Type != "granted" || ev.Permit != l.Permit() || ev.Resource != l.Resource() || ev.Holder.Token != client.Unsigned(l.Token()) {
			t.Fatalf("got %+v, want slot %d granted with %s", ev, l.Permit(), client.Unsigned(l.Token()))
		}
	}
	third := make(chan *client.Lease, 1)
	go func() {
		l, err := c.Acquire(context.Background(), sem, opts("c", 30*time.Second))
		if err != nil {
			t.Error(err)
		}
		third <- l
	}()
	var st *client.LockState
	if !testenv.WaitFor(20*time.Second, func() bool {
		st, err = c.Observe(ctx, sem)
		return err == nil && st.Waiting == 1
	}) {
		t.Fatalf("the third never queued: %+v, %v", st, err)
	}
	if st.Permits != 2 || st.Holder != nil || len(st.Holders) != 2 || st.Transitions != base[1]+base[2]+2 || len(st.Waiters) != 1 || st.Waiters[0].Value != "c" || st.Waiters[0].Token != "" {
		t.Fatalf("observed %+v; want 2 permits, 2 holders, c waiting without a token", st)
	}
	for _, h := range st.Holders {
		l := map[int]*client.Lease{a.Permit(): a, b.Permit(): b}[h.Permit]
		if l == nil {
			t.Fatalf("holder %+v: no lease of ours holds slot %d", h, h.Permit)
		}
		if h.Resource != l.Resource() || h.Token != client.Unsigned(l.Token()) || h.TTL <= 0 || h.Transitions != base[h.Permit]+1 {
			t.Errorf("holder %+v; want slot %d's with %s, a TTL, one more transition", h, h.Permit, client.Unsigned(l.Token()))
		}
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if ev := next(); ev.Type != "released" || ev.Permit != a.Permit() {
		t.Fatalf("got %+v, want slot %d released", ev, a.Permit())
	}
	l := <-third
	if l == nil {
		t.FailNow()
	}
	defer l.Release(context.Background())
	if ev := next(); ev.Type != "granted" || ev.Permit != a.Permit() || ev.Holder.Value != "c" {
		t.Fatalf("got %+v, want slot %d granted to c", ev, a.Permit())
	}
}

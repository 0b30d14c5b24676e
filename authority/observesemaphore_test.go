package authority_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/tokens"
)

// TestObserveSemaphore: a semaphore of 2 with two holders and two waiters
// shows each slot's holder (its permit token, TTL, value and the slot's
// transitions) and the waiters in line order with their lease IDs and no
// token; after a holder's lease expires, its slot shows the first waiter,
// and the line the other.
func TestObserveSemaphore(t *testing.T) {
	a, cli := newAuthority(t)
	const sem = "obs/sem"
	ctx := t.Context()
	st, err := a.ObserveSemaphore(ctx, sem, 2)
	if err != nil || len(st.Slots) != 2 || st.Slots[0].Holder != nil || st.Slots[1].Holder != nil || len(st.Waiters) != 0 || st.Waiting != 0 {
		t.Fatalf("a semaphore nobody holds: %+v, %v; want two free slots and nobody waiting", st, err)
	}
	before := [2]int64{st.Slots[0].Transitions, st.Slots[1].Transitions} // the package's runs share etcd
	opts := func(value string, wait time.Duration) authority.AcquireOptions {
		return authority.AcquireOptions{TTL: 30 * time.Second, Wait: wait, Value: value, Permits: 2}
	}
	held := map[int]authority.Lease{}
	for _, v := range []string{"h1", "h2"} {
		l, err := a.Acquire(ctx, sem, opts(v, 0))
		if err != nil {
			t.Fatal(err)
		}
		held[l.Token.Permit] = l
	}
	granted := make(chan authority.Lease, 2)
	waitCtx, stop := context.WithCancel(ctx)
	defer stop()
	pending := 2 // waiters not yet heard from
	for i, v := range []string{"w1", "w2"} {
		go func() {
			l, err := a.Acquire(waitCtx, sem, opts(v, time.Minute))
			if err != nil {
				l = authority.Lease{}
			}
			granted <- l
		}()
		waitForLine(t, cli, sem, int64(3+i))
	}
	defer func() {
		stop()
		for range pending {
			if l := <-granted; l.ID != 0 {
				_ = a.Release(context.Background(), l.ID, "")
			}
		}
	}()

	st, err = a.ObserveSemaphore(ctx, sem, 2)
	if err != nil {
		t.Fatal(err)
	}
	if st.Semaphore != sem || st.Permits != 2 || st.Revision == 0 {
		t.Errorf("observed %q of %d at %d; want %s of 2 at a revision", st.Semaphore, st.Permits, st.Revision, sem)
	}
	for k := 1; k <= 2; k++ {
		s, l := st.Slots[k-1], held[k]
		if s.Permit != k || s.Resource != tokens.PermitResource(sem, k) || s.Holder == nil {
			t.Fatalf("slot %d: %+v; want %s held", k, s, tokens.PermitResource(sem, k))
		}
		if s.Holder.LeaseID != l.ID || s.Holder.Token != l.Token.Unsigned() || s.Holder.TTL <= 0 || s.Holder.Value != fmt.Sprintf("h%d", k) {
			t.Errorf("slot %d's holder %+v; want lease %s, token %s, a TTL and value h%d", k, *s.Holder, l.ID, l.Token.Unsigned(), k)
		}
		if s.Transitions != before[k-1]+1 {
			t.Errorf("slot %d: %d transitions, want %d", k, s.Transitions, before[k-1]+1)
		}
	}
	line := queueKeys(t, cli, sem)
	if len(st.Waiters) != 2 || st.Waiting != 2 {
		t.Fatalf("waiters %+v, waiting %d; want 2", st.Waiters, st.Waiting)
	}
	for i, w := range st.Waiters {
		if w.LeaseID != line[2+i] || !w.Token.IsZero() || w.Value != fmt.Sprintf("w%d", i+1) || w.TTL != 0 {
			t.Errorf("waiter %d: %+v; want lease %s (the line's %d), no token, no TTL, value w%d", i, w, line[2+i], 3+i, i+1)
		}
	}
	if st.Transitions() != before[0]+before[1]+2 {
		t.Errorf("the semaphore's transitions %d, want %d", st.Transitions(), before[0]+before[1]+2)
	}

	// The holder of slot 1 pauses past its lease: etcd ends it unmarked,
	// as an expiry, and the first waiter takes the slot.
	first := st.Waiters[0].LeaseID
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(held[1].ID)); err != nil {
		t.Fatal(err)
	}
	next := <-granted
	pending--
	if next.ID != first || next.Token.Permit != 1 {
		t.Fatalf("after the expiry, %s was granted slot %d; want the first waiter %s in slot 1", next.ID, next.Token.Permit, first)
	}
	defer a.Release(context.Background(), next.ID, "")
	defer a.Release(context.Background(), held[2].ID, "")
	st, err = a.ObserveSemaphore(ctx, sem, 2)
	if err != nil {
		t.Fatal(err)
	}
	if h := st.Slots[0].Holder; h == nil || h.LeaseID != first || h.Token != next.Token.Unsigned() || h.Value != "w1" || st.Slots[0].Transitions != before[0]+2 {
		t.Errorf("slot 1 after the expiry: %+v; want the first waiter with %s, value w1, %d transitions", st.Slots[0], next.Token.Unsigned(), before[0]+2)
	}
	if h := st.Slots[1].Holder; h == nil || h.LeaseID != held[2].ID {
		t.Errorf("slot 2 after the expiry: %+v; want its holder unchanged", st.Slots[1])
	}
	if len(st.Waiters) != 1 || st.Waiting != 1 || st.Waiters[0].Value != "w2" {
		t.Errorf("the line after the expiry: %+v, waiting %d; want w2 alone", st.Waiters, st.Waiting)
	}
}

// queueKeys lists the lease IDs in sem's line, oldest first.
func queueKeys(t *testing.T, cli *clientv3.Client, sem string) []authority.LeaseID {
	t.Helper()
	pfx := "/fencegw/queues/" + url.PathEscape(sem) + "/"
	resp, err := cli.Get(t.Context(), pfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		t.Fatal(err)
	}
	var out []authority.LeaseID
	for _, kv := range resp.Kvs {
		id, err := authority.ParseLeaseID(string(kv.Key[len(pfx):]))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// TestObserveSemaphorePastStrayKeys: keys no permit holder wrote that
// fill the first read (a line on slot 1's own name) do not hide slot 2's
// holder, nor are they taken for another semaphore's slots or waiters.
func TestObserveSemaphorePastStrayKeys(t *testing.T) {
	a, cli := newAuthority(t)
	const sem = "obs/stray"
	ctx := t.Context()
	slot1 := "/fencegw/locks/" + url.PathEscape(tokens.PermitResource(sem, 1)) + "/"
	var puts []clientv3.Op
	for i := range 101 { // more than the first read takes
		puts = append(puts, clientv3.OpPut(slot1+authority.LeaseID(i+1).String(), "stray"))
	}
	// A slot of a larger semaphore of the same name, and another name
	// that starts the same: neither is this semaphore's.
	puts = append(puts, clientv3.OpPut("/fencegw/locks/"+url.PathEscape(sem+"#3")+"/1", "other"),
		clientv3.OpPut("/fencegw/locks/"+url.PathEscape(sem+"#2x")+"/1", "other"))
	if _, err := cli.Txn(ctx).Then(puts...).Commit(); err != nil {
		t.Fatal(err)
	}
	defer cli.Delete(context.Background(), "/fencegw/locks/"+url.PathEscape(sem+"#"), clientv3.WithPrefix())
	l, err := a.Acquire(ctx, sem, authority.AcquireOptions{TTL: 30 * time.Second, Permits: 2, Value: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(context.Background(), l.ID, "")
	if l.Token.Permit != 2 {
		t.Fatalf("granted slot %d; want 2, slot 1 has keys", l.Token.Permit)
	}
	st, err := a.ObserveSemaphore(ctx, sem, 2)
	if err != nil {
		t.Fatal(err)
	}
	if h := st.Slots[1].Holder; h == nil || h.LeaseID != l.ID || h.Token != l.Token.Unsigned() || h.Value != "mine" {
		t.Errorf("slot 2: %+v; want the permit holder %s", st.Slots[1], l.Token.Unsigned())
	}
	if h := st.Slots[0].Holder; h == nil || h.Value != "stray" || h.Token.Permit != 1 {
		t.Errorf("slot 1: %+v; want its oldest key", st.Slots[0])
	}
	if len(st.Waiters) != 0 || st.Waiting != 0 {
		t.Errorf("waiters %+v, waiting %d; want none", st.Waiters, st.Waiting)
	}
}

// TestObserveSemaphoreRefusesBadInput: no semaphore has 0 permits or more
// than the most, nor a name that is no resource.
func TestObserveSemaphoreRefusesBadInput(t *testing.T) {
	a, _ := newAuthority(t)
	for _, tt := range []struct {
		name, sem string
		permits   int
		want      error
	}{
		{"no permits", "obs/bad", 0, authority.ErrBadPermits},
		{"negative permits", "obs/bad", -1, authority.ErrBadPermits},
		{"too many permits", "obs/bad", tokens.MaxPermits + 1, authority.ErrBadPermits},
		{"no name", "", 2, tokens.ErrBadResource},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := a.ObserveSemaphore(t.Context(), tt.sem, tt.permits); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// TestWatchSemaphore: a watch of a semaphore starts with every slot's
// state, free ones too, then reports each slot's grants, value changes
// and ends, naming the slot and its permit; a lock under the slots'
// names that is no slot of this semaphore is not reported.
func TestWatchSemaphore(t *testing.T) {
	a, cli := newAuthority(t)
	const sem = "watchsem/a"
	ctx := t.Context()
	permit := func(value string, wait time.Duration) authority.Lease {
		t.Helper()
		l, err := a.Acquire(ctx, sem, authority.AcquireOptions{TTL: 30 * time.Second, Wait: wait, Value: value, Permits: 2})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	before, err := a.ObserveSemaphore(ctx, sem, 2) // the package's runs share etcd
	if err != nil {
		t.Fatal(err)
	}
	n1, n2 := before.Slots[0].Transitions, before.Slots[1].Transitions
	h1 := permit("h1", 0)
	if h1.Token.Permit != 1 {
		t.Fatalf("the first permit is slot %d, want 1", h1.Token.Permit)
	}
	w, err := a.Watch(ctx, authority.WatchOptions{Resource: sem, Permits: 2, Queue: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	slot := func(ev authority.LockEvent) string {
		return fmt.Sprintf("%s permit %d", describe(ev), ev.Permit)
	}
	expectSlot := func(want string) authority.LockEvent {
		t.Helper()
		ev := next(t, w)
		if got := slot(ev); got != want {
			t.Fatalf("event: got %s, want %s", got, want)
		}
		return ev
	}
	tok := func(l authority.Lease) authority.Contender { return authority.Contender{Token: l.Token.Unsigned()} }
	state := expectSlot(fmt.Sprintf("state %s#1 #%d %s=%q permit 1", sem, n1+1, tok(h1).Token, "h1"))
	if state.Holder.LeaseID != h1.ID || state.Holder.TTL <= 0 {
		t.Errorf("slot 1's state: holder %+v, want lease %s with its TTL", *state.Holder, h1.ID)
	}
	expectSlot(fmt.Sprintf("state %s#2 #%d permit 2", sem, n2))
	expectSlot("synced  #0 permit 0")

	// Not this semaphore's slots: a slot past its permits, another name.
	for _, other := range []string{sem + "#3", sem + "#1x"} {
		l := acquire(t, a, other, 0)
		if err := a.Release(ctx, l.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	h2 := permit("h2", 0)
	expectSlot(fmt.Sprintf("granted %s#2 #%d %s=%q permit 2", sem, n2+1, tok(h2).Token, "h2"))
	granted := make(chan authority.Lease, 1)
	go func() {
		l, err := a.Acquire(context.Background(), sem, authority.AcquireOptions{TTL: 30 * time.Second, Wait: time.Minute, Value: "w", Permits: 2})
		if err != nil {
			t.Error(err)
		}
		granted <- l
	}()
	waitForLine(t, cli, sem, 3)
	if err := a.SetValue(ctx, h1.ID, "", "h1, again"); err != nil {
		t.Fatal(err)
	}
	expectSlot(fmt.Sprintf("value %s#1 #%d %s=%q permit 1", sem, n1+1, tok(h1).Token, "h1, again"))
	if err := a.Release(ctx, h1.ID, ""); err != nil {
		t.Fatal(err)
	}
	expectSlot(fmt.Sprintf("released %s#1 #%d %s=%q permit 1", sem, n1+1, tok(h1).Token, "h1, again"))
	waiter := <-granted
	expectSlot(fmt.Sprintf("granted %s#1 #%d %s=%q permit 1", sem, n1+2, tok(waiter).Token, "w"))
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(waiter.ID)); err != nil { // unmarked: an expiry
		t.Fatal(err)
	}
	expectSlot(fmt.Sprintf("expired %s#1 #%d %s=%q permit 1", sem, n1+2, tok(waiter).Token, "w"))
	a.Abandon(ctx, h2.ID, "")
	expectSlot(fmt.Sprintf("revoked %s#2 #%d %s=%q permit 2", sem, n2+1, tok(h2).Token, "h2"))
}

// TestWatchSemaphoreRefusesBadPermits: a semaphore's watch names it and
// has 1 to the most permits.
func TestWatchSemaphoreRefusesBadPermits(t *testing.T) {
	a, _ := newAuthority(t)
	for _, opts := range []authority.WatchOptions{
		{Resource: "watchsem/b", Permits: -1, Queue: 1},
		{Resource: "watchsem/b", Permits: tokens.MaxPermits + 1, Queue: 1},
		{Prefix: "watchsem/", Permits: 2, Queue: 1},
	} {
		if w, err := a.Watch(t.Context(), opts); !errors.Is(err, authority.ErrBadPermits) {
			if w != nil {
				w.Stop()
			}
			t.Errorf("Watch(%+v): %v, want ErrBadPermits", opts, err)
		}
	}
}

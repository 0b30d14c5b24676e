package authority_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// next takes the watch's next event, failing the test if none comes.
func next(t *testing.T, w *authority.LockWatch) authority.LockEvent {
	t.Helper()
	select {
	case ev, ok := <-w.Events:
		if !ok {
			t.Fatalf("the watch ended: %v", w.Err())
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30 s")
	}
	return authority.LockEvent{}
}

// describe is an event as the tests compare it.
func describe(ev authority.LockEvent) string {
	s := fmt.Sprintf("%s %s #%d", ev.Type, ev.Resource, ev.Transitions)
	if ev.Holder != nil {
		s += fmt.Sprintf(" %s=%q", ev.Holder.Token, ev.Holder.Value)
	}
	return s
}

func expect(t *testing.T, w *authority.LockWatch, want string) authority.LockEvent {
	t.Helper()
	ev := next(t, w)
	if got := describe(ev); got != want {
		t.Fatalf("event: got %s, want %s", got, want)
	}
	return ev
}

// TestWatchReportsEveryChange: the state first, then each grant (counted),
// value change and end, named by how it ended, in order.
func TestWatchReportsEveryChange(t *testing.T) {
	a, _ := newAuthority(t)
	const res = "watch/every"
	w, err := a.Watch(t.Context(), authority.WatchOptions{Resource: res, Queue: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	expect(t, w, "state watch/every #0")
	expect(t, w, "synced  #0")

	first, err := a.Acquire(t.Context(), res, authority.AcquireOptions{TTL: 5 * time.Second, Value: "one"})
	if err != nil {
		t.Fatal(err)
	}
	tok := first.Token.Unsigned()
	expect(t, w, fmt.Sprintf("granted %s #1 %s=%q", res, tok, "one"))
	if err := a.SetValue(t.Context(), first.ID, "", "one, again"); err != nil {
		t.Fatal(err)
	}
	expect(t, w, fmt.Sprintf("value %s #1 %s=%q", res, tok, "one, again"))
	if err := a.Release(t.Context(), first.ID, ""); err != nil {
		t.Fatal(err)
	}
	expect(t, w, fmt.Sprintf("released %s #1 %s=%q", res, tok, "one, again"))

	second, err := a.Acquire(t.Context(), res, authority.AcquireOptions{TTL: time.Second, Value: "two"})
	if err != nil {
		t.Fatal(err)
	}
	tok = second.Token.Unsigned()
	expect(t, w, fmt.Sprintf("granted %s #2 %s=%q", res, tok, "two"))
	expect(t, w, fmt.Sprintf("expired %s #2 %s=%q", res, tok, "two")) // nobody renews it

	third, err := a.Acquire(t.Context(), res, authority.AcquireOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tok = third.Token.Unsigned()
	expect(t, w, fmt.Sprintf("granted %s #3 %s=%q", res, tok, ""))
	a.Abandon(t.Context(), third.ID, "")
	expect(t, w, fmt.Sprintf("revoked %s #3 %s=%q", res, tok, ""))

	st, err := a.Observe(t.Context(), res)
	if err != nil {
		t.Fatal(err)
	}
	if st.Transitions != 3 {
		t.Errorf("Observe: %d transitions, want 3", st.Transitions)
	}
}

// TestWatchResumesAfterARevision: a watch resumed after the last event it
// delivered gets every change made while it was away, without the state.
func TestWatchResumesAfterARevision(t *testing.T) {
	a, _ := newAuthority(t)
	const res = "watch/resume"
	w, err := a.Watch(t.Context(), authority.WatchOptions{Resource: res, Queue: 16})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, w, "state watch/resume #0")
	last := next(t, w).Revision
	w.Stop()

	var want []string
	for i := range 3 {
		l, err := a.Acquire(t.Context(), res, authority.AcquireOptions{TTL: 5 * time.Second, Value: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Release(t.Context(), l.ID, ""); err != nil {
			t.Fatal(err)
		}
		tok := l.Token.Unsigned()
		want = append(want, fmt.Sprintf("granted %s #%d %s=%q", res, i+1, tok, fmt.Sprint(i)),
			fmt.Sprintf("released %s #%d %s=%q", res, i+1, tok, fmt.Sprint(i)))
	}
	w, err = a.Watch(t.Context(), authority.WatchOptions{Resource: res, After: last, Queue: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, s := range want {
		if ev := expect(t, w, s); ev.Revision <= last {
			t.Fatalf("%s at revision %d, not after %d", s, ev.Revision, last)
		}
	}
}

// TestWatchRefusesAFutureRevision: no watch resumes after a revision etcd
// has not issued.
func TestWatchRefusesAFutureRevision(t *testing.T) {
	a, _ := newAuthority(t)
	newest, err := a.Revision(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, after := range []int64{newest + 1000, -1} {
		if _, err := a.Watch(t.Context(), authority.WatchOptions{Resource: "watch/future", After: after, Queue: 1}); !errors.Is(err, authority.ErrFutureRevision) {
			t.Errorf("after %d: got %v, want ErrFutureRevision", after, err)
		}
	}
}

// TestWatchAfterACompactionRelists: resumed after a compacted revision,
// the watch says so and sends the state again.
func TestWatchAfterACompactionRelists(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	a := authority.NewEtcd(cli, testenv.KEK())
	const res = "watch/compacted"
	l, err := a.Acquire(t.Context(), res, authority.AcquireOptions{TTL: 5 * time.Second, Value: "v"})
	if err != nil {
		t.Fatal(err)
	}
	start := l.Token.Revision
	if err := a.SetValue(t.Context(), l.ID, "", "w"); err != nil {
		t.Fatal(err)
	}
	// A revision more, so that the one the watch resumes at is compacted
	// too: a grant writes one revision, the value another.
	if _, err := cli.Put(t.Context(), "/fencegw-test/"+t.Name(), "later"); err != nil {
		t.Fatal(err)
	}
	newest, err := a.Revision(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(t.Context(), newest); err != nil {
		t.Fatal(err)
	}
	w, err := a.Watch(t.Context(), authority.WatchOptions{Resource: res, After: start, Queue: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := next(t, w); ev.Type != authority.EventRelist || ev.Revision != newest {
		t.Fatalf("got %s at %d, want relist at %d", describe(ev), ev.Revision, newest)
	}
	expect(t, w, fmt.Sprintf("state %s #1 %s=%q", res, l.Token.Unsigned(), "w"))
	expect(t, w, "synced  #0")
}

// TestWatchCutsOffASlowReader: a reader that takes nothing is cut off
// once its queue is full, not buffered for.
func TestWatchCutsOffASlowReader(t *testing.T) {
	a, _ := newAuthority(t)
	const res = "watch/slow"
	w, err := a.Watch(t.Context(), authority.WatchOptions{Resource: res, Queue: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := 0; ; i++ {
		l, err := a.Acquire(t.Context(), res, authority.AcquireOptions{TTL: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Release(t.Context(), l.ID, ""); err != nil {
			t.Fatal(err)
		}
		select {
		case <-w.Events:
			if errors.Is(w.Err(), authority.ErrSlowReader) {
				return
			}
		default:
		}
		if i > 100 {
			t.Fatal("never cut off")
		}
	}
}

// TestSetValueOnlyByTheHolder: a waiter's lease, another client's, and
// an unknown one change nothing.
func TestSetValueOnlyByTheHolder(t *testing.T) {
	a, _ := newAuthority(t)
	const res = "watch/setvalue"
	holder, err := a.Acquire(t.Context(), res, authority.AcquireOptions{TTL: 5 * time.Second, Value: "mine", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(t.Context(), holder.ID, "alice")
	waiter := make(chan authority.Lease, 1)
	go func() {
		l, err := a.Acquire(t.Context(), res, authority.AcquireOptions{TTL: 5 * time.Second, Wait: time.Minute, Owner: "bob"})
		if err == nil {
			waiter <- l
		}
	}()
	var waiting authority.LeaseID
	if !testenv.WaitFor(10*time.Second, func() bool {
		st, err := a.Observe(t.Context(), res)
		if err == nil && len(st.Waiters) == 1 {
			waiting = st.Waiters[0].LeaseID
		}
		return waiting != 0
	}) {
		t.Fatal("the waiter never queued")
	}
	cases := []struct {
		name  string
		id    authority.LeaseID
		owner string
		want  error
	}{
		{"a waiter", waiting, "bob", authority.ErrLeaseNotFound},
		{"another client", holder.ID, "bob", authority.ErrNotOwner},
		{"unknown lease", 0x7fffffff, "alice", authority.ErrLeaseNotFound},
	}
	for _, c := range cases {
		if err := a.SetValue(t.Context(), c.id, c.owner, "theirs"); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if err := a.SetValue(t.Context(), holder.ID, "alice", string([]byte{0})); !errors.Is(err, authority.ErrBadValue) {
		t.Errorf("NUL value: got %v, want ErrBadValue", err)
	}
	st, err := a.Observe(t.Context(), res)
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder == nil || st.Holder.Value != "mine" || st.Waiters[0].Value != "" || st.Transitions != 1 {
		t.Fatalf("after refused updates: %+v, want the holder's value mine, the waiter's empty, 1 transition", st)
	}
	if err := a.Release(t.Context(), holder.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	l := <-waiter
	defer a.Release(t.Context(), l.ID, "bob")
	if err := a.SetValue(t.Context(), l.ID, "bob", "bob's now"); err != nil {
		t.Fatalf("the waiter, granted: %v", err)
	}
}

// TestWatchProgressOutlivesACompaction: an idle watch with Progress learns
// how far etcd has come, so a watch resumed from there after a compaction
// gets the changes that follow, not a relist.
func TestWatchProgressOutlivesACompaction(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	a := authority.NewEtcd(cli, testenv.KEK())
	const res, other = "watch/idle", "watch/busy"
	w, err := a.Watch(t.Context(), authority.WatchOptions{Resource: res, Queue: 16, Progress: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, w, "state watch/idle #0")
	expect(t, w, "synced  #0")
	for range 3 { // changes elsewhere move etcd on
		l, err := a.Acquire(t.Context(), other, authority.AcquireOptions{TTL: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Release(t.Context(), l.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	newest, err := a.Revision(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var progress authority.LockEvent
	for progress.Revision < newest {
		if progress = next(t, w); progress.Type != authority.EventProgress {
			t.Fatalf("got %s, want only progress on an idle lock", describe(progress))
		}
	}
	w.Stop()
	if _, err := cli.Compact(t.Context(), progress.Revision); err != nil {
		t.Fatal(err)
	}
	l, err := a.Acquire(t.Context(), res, authority.AcquireOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w, err = a.Watch(t.Context(), authority.WatchOptions{Resource: res, After: progress.Revision, Queue: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	expect(t, w, fmt.Sprintf("granted %s #1 %s=%q", res, l.Token.Unsigned(), ""))
}

// TestWatchOfEveryLock: All follows locks whatever their names; it is
// said outright, so an empty name without it, or with a name, is refused.
func TestWatchOfEveryLock(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t) // every lock: no other test's
	a := authority.NewEtcd(cli, testenv.KEK())
	held, err := a.Acquire(t.Context(), "every/a", authority.AcquireOptions{TTL: 5 * time.Second, Value: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(t.Context(), held.ID, "")
	w, err := a.Watch(t.Context(), authority.WatchOptions{All: true, Queue: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	expect(t, w, fmt.Sprintf("state every/a #1 %s=%q", held.Token.Unsigned(), "a"))
	expect(t, w, "synced  #0")
	other, err := a.Acquire(t.Context(), "elsewhere/b", authority.AcquireOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, w, fmt.Sprintf("granted elsewhere/b #1 %s=%q", other.Token.Unsigned(), ""))
	if err := a.Release(t.Context(), other.ID, ""); err != nil {
		t.Fatal(err)
	}
	expect(t, w, fmt.Sprintf("released elsewhere/b #1 %s=%q", other.Token.Unsigned(), ""))

	for _, opts := range []authority.WatchOptions{{Queue: 1}, {All: true, Prefix: "every/", Queue: 1}, {All: true, Resource: "every/a", Queue: 1}} {
		if w, err := a.Watch(t.Context(), opts); err == nil {
			w.Stop()
			t.Errorf("%+v: a watch, want it refused", opts)
		}
	}
}

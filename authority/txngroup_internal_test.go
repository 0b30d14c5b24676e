package authority

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// heldLine holds the first lock transaction an authority sends until
// release is closed, so that the acquisitions started meanwhile wait in
// line, and records which lock keys each Txn sent carries.
type heldLine struct {
	entered, release chan struct{}
	lines            chan int // the line's length, each time it grows

	mu   sync.Mutex
	sent [][]string // per Txn sent, the lock keys it puts
}

func holdLine(a *Etcd) *heldLine {
	h := &heldLine{entered: make(chan struct{}), release: make(chan struct{}), lines: make(chan int, 100)}
	send := a.txns.send
	first := sync.Once{}
	a.txns.send = func(ctx context.Context, t txn) (txnResult, error) {
		h.mu.Lock()
		h.sent = append(h.sent, lockKeysOf(t))
		h.mu.Unlock()
		first.Do(func() {
			close(h.entered)
			<-h.release
		})
		return send(ctx, t)
	}
	a.txns.queued = func(n int) { h.lines <- n }
	return h
}

// lockKeysOf are the lock keys t puts, nested or not.
func lockKeysOf(t txn) []string {
	var keys []string
	for _, o := range t.then {
		switch {
		case o.nested != nil:
			keys = append(keys, lockKeysOf(*o.nested)...)
		case o.name == "lock key":
			keys = append(keys, string(o.op.KeyBytes()))
		}
	}
	return keys
}

// waitLine waits until the line has n acquisitions.
func (h *heldLine) waitLine(t *testing.T, n int) {
	t.Helper()
	for got := range h.lines {
		if got == n {
			return
		}
	}
}

func (h *heldLine) txns() [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.sent)
}

type acquired struct {
	l   Lease
	err error
}

func acquireAsync(a *Etcd, ctx context.Context, resource string, opts AcquireOptions) <-chan acquired {
	c := make(chan acquired, 1)
	go func() {
		l, err := a.Acquire(ctx, resource, opts)
		c <- acquired{l, err}
	}()
	return c
}

// TestLockTxnsGroupDistinctResources: acquisitions of distinct resources
// that queue while a lock transaction is in flight go as one etcd Txn,
// each granted with a token of its own resource, each on a lease of its
// own, and each the holder etcd names.
func TestLockTxnsGroupDistinctResources(t *testing.T) {
	a := NewEtcd(testenv.EtcdClient(t), testenv.KEK())
	h := holdLine(a)
	opts := AcquireOptions{TTL: 30 * time.Second, Owner: "group"}
	pfx := "group/" + t.Name() + "/"
	first := acquireAsync(a, t.Context(), pfx+"first", opts)
	<-h.entered
	const n = 12
	var waiting []<-chan acquired
	for i := range n {
		o := opts
		if i%3 == 1 {
			o.Key = "key-" + string(rune('a'+i)) // idempotent ones group too
		}
		waiting = append(waiting, acquireAsync(a, t.Context(), pfx+string(rune('a'+i)), o))
	}
	h.waitLine(t, n)
	close(h.release)
	lead := <-first
	if lead.err != nil {
		t.Fatal(lead.err)
	}
	ids := map[LeaseID]bool{lead.l.ID: true}
	var rev int64
	for i, c := range waiting {
		got := <-c
		if got.err != nil {
			t.Fatalf("acquisition %d: %v", i, got.err)
		}
		defer a.Release(context.WithoutCancel(t.Context()), got.l.ID, opts.Owner)
		if ids[got.l.ID] {
			t.Fatalf("acquisition %d: lease %s given twice", i, got.l.ID)
		}
		ids[got.l.ID] = true
		holder, ok, err := a.Holder(t.Context(), got.l.Resource)
		if err != nil || !ok || holder.Revision != got.l.Token.Revision {
			t.Fatalf("%s: holder %v (%t, %v), want the token granted, revision %d", got.l.Resource, holder, ok, err, got.l.Token.Revision)
		}
		if rev == 0 {
			rev = got.l.Token.Revision
		}
		if got.l.Token.Revision != rev || rev <= lead.l.Token.Revision {
			t.Fatalf("%s: token revision %d, want the group's %d, after the first's %d", got.l.Resource, got.l.Token.Revision, rev, lead.l.Token.Revision)
		}
		ttl, err := a.cli.TimeToLive(t.Context(), clientv3.LeaseID(got.l.ID))
		if err != nil || ttl.TTL <= 0 {
			t.Fatalf("%s: etcd lease %s: ttl %v, %v; want it alive", got.l.Resource, got.l.ID, ttl, err)
		}
	}
	if g, m := a.txns.groups.Load(), a.txns.grouped.Load(); g != 1 || m != n {
		t.Fatalf("%d groups of %d acquisitions in all; want 1 of %d (sent: %q)", g, m, n, h.txns())
	}
	a.Release(t.Context(), lead.l.ID, opts.Owner)
}

// TestLockTxnsNeverGroupOneResource: two acquisitions of one resource in
// line never share a Txn; the second goes in a later one, after the
// acquisitions of other resources that queued behind it, and its token is
// the later.
func TestLockTxnsNeverGroupOneResource(t *testing.T) {
	a := NewEtcd(testenv.EtcdClient(t), testenv.KEK())
	h := holdLine(a)
	opts := AcquireOptions{TTL: 30 * time.Second, Owner: "group"}
	pfx := "group/" + t.Name() + "/"
	first := acquireAsync(a, t.Context(), pfx+"first", opts)
	<-h.entered
	one, other := acquireAsync(a, t.Context(), pfx+"one", opts), (<-chan acquired)(nil)
	h.waitLine(t, 1)
	waits := opts
	waits.Wait = time.Minute
	second := acquireAsync(a, t.Context(), pfx+"one", waits)
	h.waitLine(t, 2)
	other = acquireAsync(a, t.Context(), pfx+"other", opts)
	h.waitLine(t, 3)
	close(h.release)
	var ls []Lease
	for _, c := range []<-chan acquired{first, one, other} {
		got := <-c
		if got.err != nil {
			t.Fatal(got.err)
		}
		ls = append(ls, got.l)
	}
	if ls[1].Token.Revision != ls[2].Token.Revision {
		t.Fatalf("the first of one and other: revisions %d and %d, want one group's", ls[1].Token.Revision, ls[2].Token.Revision)
	}
	if g, m := a.txns.groups.Load(), a.txns.grouped.Load(); g != 1 || m != 2 {
		t.Fatalf("%d groups of %d acquisitions in all; want 1 of 2, one and other (sent: %q)", g, m, h.txns())
	}
	if err := a.Release(t.Context(), ls[1].ID, opts.Owner); err != nil {
		t.Fatal(err)
	}
	got := <-second
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.l.Token.Revision <= ls[1].Token.Revision {
		t.Fatalf("the second of one: token revision %d, want after the first's %d", got.l.Token.Revision, ls[1].Token.Revision)
	}
	for _, l := range append(ls[:1], ls[2], got.l) {
		a.Release(t.Context(), l.ID, opts.Owner)
	}
	for _, keys := range h.txns() {
		seen := map[string]bool{}
		for _, k := range keys {
			r := k[:strings.LastIndex(k, "/")]
			if seen[r] {
				t.Fatalf("one Txn put two lock keys of %s: %q", r, keys)
			}
			seen[r] = true
		}
	}
}

// TestLockTxnsGroupWithAGoneLease: a group that etcd refuses because one
// member's lease is gone goes again member by member: the others are
// granted, and only that one fails.
func TestLockTxnsGroupWithAGoneLease(t *testing.T) {
	a := NewEtcd(testenv.EtcdClient(t), testenv.KEK())
	h := holdLine(a)
	opts := AcquireOptions{TTL: 30 * time.Second, Owner: "group"}
	pfx := "group/" + t.Name() + "/"
	first := acquireAsync(a, t.Context(), pfx+"first", opts)
	<-h.entered
	kept := acquireAsync(a, t.Context(), pfx+"kept", opts)
	h.waitLine(t, 1)
	gone := acquireAsync(a, t.Context(), pfx+"gone", opts)
	h.waitLine(t, 2)
	// The lease of gone's lock key ends before its group is sent.
	a.txns.mu.Lock()
	key := lockKeysOf(a.txns.queue[1].t)[0]
	a.txns.mu.Unlock()
	id, err := ParseLeaseID(key[strings.LastIndex(key, "/")+1:])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.cli.Revoke(t.Context(), clientv3.LeaseID(id)); err != nil {
		t.Fatal(err)
	}
	close(h.release)
	var ls []Lease
	for _, c := range []<-chan acquired{first, kept} {
		got := <-c
		if got.err != nil {
			t.Fatalf("%v; want granted, whatever happened to another's lease", got.err)
		}
		ls = append(ls, got.l)
	}
	if got := <-gone; !errors.Is(got.err, ErrUnavailable) {
		t.Fatalf("the acquisition whose lease went: %+v, %v; want unavailable, as alone", got.l, got.err)
	}
	if g := a.txns.groups.Load(); g != 0 {
		t.Fatalf("%d groups committed; want none, the group refused", g)
	}
	if sent := h.txns(); len(sent) != 4 {
		t.Fatalf("Txns sent: %q; want the first, the group, and each member alone", sent)
	}
	for _, l := range ls {
		a.Release(t.Context(), l.ID, opts.Owner)
	}
}

// TestReleasesGroup: the release marks of leases that queue while one is
// in flight go as one Txn, and each lease ends.
func TestReleasesGroup(t *testing.T) {
	a := NewEtcd(testenv.EtcdClient(t), testenv.KEK())
	opts := AcquireOptions{TTL: 30 * time.Second, Owner: "group"}
	const n = 8
	var ls []Lease
	for i := range n {
		l, err := a.Acquire(t.Context(), "group/"+t.Name()+"/"+string(rune('a'+i)), opts)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	h := holdLine(a)
	release := func(l Lease) <-chan error {
		c := make(chan error, 1)
		go func() { c <- a.Release(t.Context(), l.ID, opts.Owner) }()
		return c
	}
	var done []<-chan error
	done = append(done, release(ls[0]))
	<-h.entered
	for i, l := range ls[1:] {
		done = append(done, release(l))
		h.waitLine(t, i+1)
	}
	close(h.release)
	for i, c := range done {
		if err := <-c; err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
		ttl, err := a.cli.TimeToLive(t.Context(), clientv3.LeaseID(ls[i].ID))
		if err != nil || ttl.TTL != -1 {
			t.Fatalf("lease %s after its release: ttl %v, %v; want gone", ls[i].ID, ttl, err)
		}
	}
	if g, m := a.txns.groups.Load(), a.txns.grouped.Load(); g != 1 || m != n-1 {
		t.Fatalf("%d groups of %d in all; want 1 of %d", g, m, n-1)
	}
}

// TestATxnTooBigToNestStillGoes: a transaction in line with more
// operations than etcd allows a group goes alone, answered with etcd's
// own refusal, and the line behind it moves on; it never stalls the
// line (taking it from the line would find no group to make of it).
func TestATxnTooBigToNestStillGoes(t *testing.T) {
	a := NewEtcd(testenv.EtcdClient(t), testenv.KEK())
	h := holdLine(a)
	opts := AcquireOptions{TTL: 30 * time.Second, Owner: "group"}
	pfx := "group/" + t.Name() + "/"
	first := acquireAsync(a, t.Context(), pfx+"first", opts)
	<-h.entered
	var big txn
	for i := range etcdMaxTxnOps + 2 {
		big.then = append(big.then, named("put", clientv3.OpPut(pfx+"big/"+strings.Repeat("k", i+1), "v")))
	}
	bigDone := make(chan error, 1)
	go func() { _, err := a.txns.commit(t.Context(), big); bigDone <- err }()
	h.waitLine(t, 1)
	after := acquireAsync(a, t.Context(), pfx+"after", opts)
	h.waitLine(t, 2)
	close(h.release)
	for _, c := range []<-chan acquired{first, after} {
		select {
		case got := <-c:
			if got.err != nil {
				t.Fatal(got.err)
			}
			defer a.Release(context.WithoutCancel(t.Context()), got.l.ID, opts.Owner)
		case <-time.After(time.Minute):
			t.Fatal("the line stalled behind a transaction too big to nest")
		}
	}
	select {
	case err := <-bigDone:
		if err == nil {
			t.Fatalf("a Txn of %d operations: committed, want etcd's refusal", len(big.then))
		}
	case <-time.After(time.Minute):
		t.Fatal("the big transaction was never answered")
	}
}

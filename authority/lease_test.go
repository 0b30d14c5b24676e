package authority_test

import (
	"context"
	"errors"
	"github.com/fencegw/fencegw/authority"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

func newAuthority(t *testing.T) (*authority.Etcd, *clientv3.Client) {
	t.Helper()
	cli := testenv.EtcdClient(t)
	return authority.NewEtcd(cli, testenv.KEK()), cli
}

func acquire(t *testing.T, a *authority.Etcd, resource string, wait time.Duration) authority.Lease {
	t.Helper()
	l, err := a.Acquire(t.Context(), resource, authority.AcquireOptions{TTL: 5 * time.Second, Wait: wait})
	if err != nil {
		t.Fatalf("Acquire %s: %v", resource, err)
	}
	return l
}

// TestMutualExclusionAndFIFO: while A holds the lock, B and then C queue;
// releasing A grants B only, releasing B grants C.
func TestMutualExclusionAndFIFO(t *testing.T) {
	a, cli := newAuthority(t)
	const res = "fifo/one"
	holder := acquire(t, a, res, 0)

	granted := make(chan string, 2)
	leases := make(chan authority.Lease, 2)
	queue := func(name string) {
		go func() {
			l, err := a.Acquire(context.Background(), res, authority.AcquireOptions{TTL: 5 * time.Second, Wait: 20 * time.Second})
			if err != nil {
				t.Errorf("%s: %v", name, err)
				granted <- name + " failed"
				return
			}
			leases <- l
			granted <- name
		}()
	}
	waitForContenders := func(n int64) {
		t.Helper()
		if !testenv.WaitFor(10*time.Second, func() bool {
			resp, err := cli.Get(t.Context(), "/fencegw/locks/fifo%2Fone/", clientv3.WithPrefix(), clientv3.WithCountOnly()) // its own: other tests share this etcd
			return err == nil && resp.Count >= n
		}) {
			t.Fatalf("fewer than %d contenders queued", n)
		}
	}
	queue("B")
	waitForContenders(2)
	queue("C")
	waitForContenders(3)

	// Both wait in line (waitForContenders saw their keys): a grant now,
	// or at any instant before the release, would be a second holder.
	select {
	case g := <-granted:
		t.Fatalf("%s was granted while A held the lock", g)
	default:
	}
	if err := a.Release(t.Context(), holder.ID, ""); err != nil {
		t.Fatal(err)
	}
	if g := <-granted; g != "B" {
		t.Fatalf("first granted after A: %s, want B (FIFO)", g)
	}
	b := <-leases
	select {
	case g := <-granted:
		t.Fatalf("%s was granted while B held the lock", g)
	default:
	}
	if b.Token.Compare(holder.Token) <= 0 {
		t.Fatalf("B's token %s is not newer than A's %s", b.Token, holder.Token)
	}
	if err := a.Release(t.Context(), b.ID, ""); err != nil {
		t.Fatal(err)
	}
	if g := <-granted; g != "C" {
		t.Fatalf("granted after B: %s, want C", g)
	}
	c := <-leases
	if err := a.Release(t.Context(), c.ID, ""); err != nil {
		t.Fatal(err)
	}
}

// TestWaitTimeoutCleansUp: a waiter that gives up is told who holds the
// lock, and leaves neither its key nor its lease behind.
func TestWaitTimeoutCleansUp(t *testing.T) {
	a, cli := newAuthority(t)
	const res = "timeout/one"
	holder := acquire(t, a, res, 0)
	before, err := cli.Leases(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Acquire(t.Context(), res, authority.AcquireOptions{TTL: 5 * time.Second, Wait: 300 * time.Millisecond})
	var locked *authority.LockedError
	if !errors.As(err, &locked) || !errors.Is(err, authority.ErrLocked) {
		t.Fatalf("Acquire on a held lock = %v, want *LockedError", err)
	}
	if locked.Holder != holder.Token.Unsigned() || locked.Resource != res {
		t.Fatalf("LockedError = %+v, want holder %s", locked, holder.Token)
	}
	after, err := cli.Leases(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Leases) != len(before.Leases) {
		t.Fatalf("leases: %d before the failed wait, %d after: the waiter's lease leaked", len(before.Leases), len(after.Leases))
	}
	keys, err := cli.Get(t.Context(), "/fencegw/locks/timeout%2Fone/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(keys.Kvs) != 1 || keys.Kvs[0].CreateRevision != holder.Token.Revision {
		t.Fatalf("lock keys after the failed wait: %d, want only the holder's", len(keys.Kvs))
	}
	if err := a.Release(t.Context(), holder.ID, ""); err != nil {
		t.Fatal(err)
	}
}

func TestLostLeaseIsNotFound(t *testing.T) {
	a, _ := newAuthority(t)
	l := acquire(t, a, "lost/one", 0)
	if r, err := a.KeepAlive(t.Context(), l.ID, ""); err != nil || r.TTL <= 0 || r.Token != l.Token {
		t.Fatalf("KeepAlive on a live lease = %+v, %v; want a TTL and the token granted, signed by the same key", r, err)
	}
	if err := a.Release(t.Context(), l.ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.KeepAlive(t.Context(), l.ID, ""); !errors.Is(err, authority.ErrLeaseNotFound) {
		t.Fatalf("KeepAlive after release = %v, want ErrLeaseNotFound", err)
	}
	if err := a.Release(t.Context(), l.ID, ""); !errors.Is(err, authority.ErrLeaseNotFound) {
		t.Fatalf("second Release = %v, want ErrLeaseNotFound", err)
	}
}

// TestNestedResourcesAreIndependent: "a" and "a/b" are different locks.
func TestNestedResourcesAreIndependent(t *testing.T) {
	a, _ := newAuthority(t)
	outer := acquire(t, a, "nest/a", 0)
	inner := acquire(t, a, "nest/a/b", 0) // would be locked if prefixes overlapped
	again := acquire(t, a, "nest/a/b/c", 0)
	for _, l := range []authority.Lease{outer, inner, again} {
		if err := a.Release(t.Context(), l.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAcquireRefusesBadInput(t *testing.T) {
	a, _ := newAuthority(t)
	tests := []struct {
		name      string
		resource  string
		ttl, wait time.Duration
		want      error
	}{
		{"empty resource", "", 5 * time.Second, 0, tokens.ErrBadResource},
		{"control character", "a\x00b", 5 * time.Second, 0, tokens.ErrBadResource},
		{"ttl too short", "ok", 0, 0, authority.ErrBadTTL},
		{"ttl too long", "ok", 2 * time.Hour, 0, authority.ErrBadTTL},
		{"negative wait", "ok", 5 * time.Second, -time.Second, authority.ErrBadTTL},
	}
	for _, tt := range tests {
		if _, err := a.Acquire(t.Context(), tt.resource, authority.AcquireOptions{TTL: tt.ttl, Wait: tt.wait}); !errors.Is(err, tt.want) {
			t.Errorf("%s: Acquire = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	a, cli := newAuthority(t)
	l := acquire(t, a, "validate/one", 0)
	defer a.Release(context.Background(), l.ID, "")
	if !l.Token.Signed() {
		t.Fatalf("granted token %s is not signed", l.Token)
	}

	// Another replica (a fresh authority on the same etcd) verifies it.
	fresh := authority.NewEtcd(cli, testenv.KEK())
	if err := fresh.Validate(t.Context(), "validate/one", "", l.Token, tokens.ValidateFence); err != nil {
		t.Fatalf("Validate(issued token) = %v", err)
	}
	tests := []struct {
		name     string
		resource string
		tok      tokens.Token
		mode     tokens.Validation
	}{
		{"unsigned, as read from etcd", "validate/one", l.Token.Unsigned(), tokens.ValidateFence},
		{"another resource", "validate/two", l.Token, tokens.ValidateFence},
		{"signed for another client", "validate/one", signedFor(t, a, l.Token, "validate/one", "ops"), tokens.ValidateFence},
		{"the signature moved to another revision", "validate/one", tokens.Token{Epoch: 1, Revision: l.Token.Revision - 1, Sig: l.Token.Sig}, tokens.ValidateFence},
		{"future revision", "validate/one", tokens.Token{Epoch: 1, Revision: l.Token.Revision + 1_000_000}, tokens.ValidateRevision},
		{"other epoch", "validate/one", tokens.Token{Epoch: 2, Revision: 1}, tokens.ValidateRevision},
		{"old epoch", "validate/one", tokens.Token{Epoch: 0, Revision: 1}, tokens.ValidateFence},
	}
	for _, tt := range tests {
		var rej *tokens.RejectedError
		if err := a.Validate(t.Context(), tt.resource, "", tt.tok, tt.mode); !errors.As(err, &rej) || rej.Presented != tt.tok.Unsigned() {
			t.Errorf("%s: Validate(%s) = %v, want *RejectedError", tt.name, tt.tok, err)
		}
	}
	// In revision mode a token is a number: the unsigned one is accepted.
	if err := a.Validate(t.Context(), "validate/one", "", l.Token.Unsigned(), tokens.ValidateRevision); err != nil {
		t.Fatalf("revision mode, an issued revision: %v", err)
	}
}

func signedFor(t *testing.T, a *authority.Etcd, tok tokens.Token, resource, client string) tokens.Token {
	t.Helper()
	signed, err := a.Sign(t.Context(), tok.Unsigned(), resource, client)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

// TestKeyRotation: a rotated key signs new tokens while the old one still
// verifies tokens granted before, on every replica; retired, it verifies
// nothing more.
func TestKeyRotation(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t) // retiring keys would refuse other tests' tokens
	a, replica := authority.NewEtcd(cli, testenv.KEK()), authority.NewEtcd(cli, testenv.KEK())
	before := acquire(t, a, "rotate/one", 0)
	if err := replica.Validate(t.Context(), "rotate/one", "", before.Token, tokens.ValidateFence); err != nil {
		t.Fatal(err)
	}
	// A key that signs in an hour: known to a replica that reloads, used
	// by none yet.
	if _, err := a.RotateKey(t.Context(), time.Hour); err != nil {
		t.Fatal(err)
	}
	later := acquire(t, a, "rotate/later", 0)
	if later.Token.Sig != signedFor(t, replica, later.Token, "rotate/later", "").Sig {
		t.Fatal("a key whose time has not come signed")
	}
	id, err := a.RotateKey(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	after := acquire(t, a, "rotate/two", 0)
	if after.Token.Sig == signedFor(t, replica, after.Token, "rotate/two", "").Sig {
		t.Fatal("the replica signs with the new key before it loaded it: the test proves nothing")
	}
	// The replica meets a signature by a key it has not loaded: it reloads
	// (at most four times a second, waiting its turn) and accepts it.
	for _, l := range []authority.Lease{before, after} {
		if err := replica.Validate(t.Context(), l.Resource, "", l.Token, tokens.ValidateFence); err != nil {
			t.Fatalf("%s after the rotation: %v", l.Resource, err)
		}
	}
	keys, err := a.Keys(t.Context())
	if err != nil || len(keys) != 3 || keys[0].ID != id || !keys[0].Signing || keys[1].Signing {
		t.Fatalf("Keys = %+v, %v; want the new one signing, then the old", keys, err)
	}
	// The leases granted under the first key end: nothing holds it back.
	for _, l := range []authority.Lease{before, later} {
		if err := a.Release(t.Context(), l.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	plan, err := a.RetireKeys(t.Context(), authority.RetireOptions{Keep: 1})
	if err != nil || len(plan) != 2 || !plan[0].Retired || !plan[1].Retired || plan[1].ID != keys[2].ID {
		t.Fatalf("RetireKeys = %+v, %v", plan, err)
	}
	if _, err := replica.ReloadKeys(t.Context()); err != nil {
		t.Fatal(err)
	}
	var rej *tokens.RejectedError
	if err := replica.Validate(t.Context(), "rotate/one", "", before.Token, tokens.ValidateFence); !errors.As(err, &rej) || !rej.Retired || !rej.Issued {
		t.Fatalf("a token of a retired key = %v, want rejected as a retired key's", err)
	}
	if err := a.Validate(t.Context(), "rotate/two", "", after.Token, tokens.ValidateFence); err != nil {
		t.Fatalf("a token of the signing key: %v", err)
	}
}

// TestUnreachableEtcdIsUnavailable: an authority that cannot reach etcd
// must say so instead of accepting or rejecting.
func TestUnreachableEtcdIsUnavailable(t *testing.T) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	a := authority.NewEtcd(cli, testenv.KEK())
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if err := a.Validate(ctx, "x", "", tokens.Token{Epoch: 1, Revision: 5}, tokens.ValidateRevision); !errors.Is(err, authority.ErrUnavailable) {
		t.Fatalf("Validate = %v, want ErrUnavailable", err)
	}
	if _, err := a.Acquire(ctx, "x", authority.AcquireOptions{TTL: 5 * time.Second, Wait: 0}); !errors.Is(err, authority.ErrUnavailable) {
		t.Fatalf("Acquire = %v, want ErrUnavailable", err)
	}
}

func TestValidateHolder(t *testing.T) {
	a, _ := newAuthority(t)
	held := acquire(t, a, "holder/one", 0)
	other := acquire(t, a, "holder/two", 0)
	defer a.Release(context.Background(), other.ID, "")
	if err := a.Validate(t.Context(), "holder/one", "", held.Token, tokens.ValidateHolder); err != nil {
		t.Fatalf("live holder refused: %v", err)
	}
	// other's token is issued and newer than held's, but it holds another lock.
	if err := a.Validate(t.Context(), "holder/one", "", other.Token, tokens.ValidateHolder); !errors.Is(err, tokens.ErrRejected) {
		t.Fatalf("another resource's holder = %v, want ErrRejected", err)
	}
	if err := a.Validate(t.Context(), "holder/one", "", other.Token.Unsigned(), tokens.ValidateRevision); err != nil {
		t.Fatalf("revision mode only checks issuance: %v", err)
	}
	if err := a.Release(t.Context(), held.ID, ""); err != nil {
		t.Fatal(err)
	}
	if err := a.Validate(t.Context(), "holder/one", "", held.Token, tokens.ValidateHolder); !errors.Is(err, tokens.ErrRejected) {
		t.Fatalf("released holder = %v, want ErrRejected", err)
	}
}

// TestLockDelayAfterExpiryNotRelease: a released lock is granted at once; a
// lock whose holder's lease expired is held back for the lock-delay.
func TestLockDelayAfterExpiryNotRelease(t *testing.T) {
	a, _ := newAuthority(t)
	opts := func(ttl, wait time.Duration) authority.AcquireOptions {
		return authority.AcquireOptions{TTL: ttl, Wait: wait, LockDelay: 2 * time.Second}
	}
	released, err := a.Acquire(t.Context(), "delay/released", opts(5*time.Second, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(t.Context(), released.ID, ""); err != nil {
		t.Fatal(err)
	}
	next, err := a.Acquire(t.Context(), "delay/released", opts(5*time.Second, 0))
	if err != nil {
		t.Fatalf("acquire after a release = %v, want it granted at once", err)
	}
	a.Release(t.Context(), next.ID, "")

	if _, err := a.Acquire(t.Context(), "delay/expired", opts(time.Second, 0)); err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(10*time.Second, func() bool {
		st, err := a.Observe(t.Context(), "delay/expired")
		return err == nil && st.Holder == nil
	}) {
		t.Fatal("the lease never expired")
	}
	_, err = a.Acquire(t.Context(), "delay/expired", opts(5*time.Second, 0))
	if !errors.Is(err, authority.ErrLocked) || !strings.Contains(err.Error(), "lock-delay") {
		t.Fatalf("acquire right after an expiry = %v, want ErrLocked in lock-delay", err)
	}
	if strings.Contains(err.Error(), "token") {
		t.Errorf("lock-delay with no holder names a token: %v", err) // it read "locked by token 0:0"
	}
	after, err := a.Acquire(t.Context(), "delay/expired", opts(5*time.Second, 10*time.Second))
	if err != nil {
		t.Fatalf("acquire waiting out the lock-delay = %v", err)
	}
	a.Release(t.Context(), after.ID, "")
}

// TestOnlyTheOwnerRenewsOrReleases: a lease ID is not a capability; and the
// authority touches no etcd lease it did not grant.
func TestOnlyTheOwnerRenewsOrReleases(t *testing.T) {
	a, cli := newAuthority(t)
	l, err := a.Acquire(t.Context(), "owner/one", authority.AcquireOptions{TTL: 5 * time.Second, Owner: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.KeepAlive(t.Context(), l.ID, "reports"); !errors.Is(err, authority.ErrNotOwner) {
		t.Fatalf("KeepAlive by another client = %v, want ErrNotOwner", err)
	}
	if err := a.Release(t.Context(), l.ID, "reports"); !errors.Is(err, authority.ErrNotOwner) {
		t.Fatalf("Release by another client = %v, want ErrNotOwner", err)
	}
	if _, err := a.KeepAlive(t.Context(), l.ID, "billing"); err != nil {
		t.Fatalf("KeepAlive by the owner = %v", err)
	}
	if err := a.Release(t.Context(), l.ID, "billing"); err != nil {
		t.Fatalf("Release by the owner = %v", err)
	}

	foreign, err := cli.Grant(t.Context(), 30)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Revoke(context.Background(), foreign.ID)
	if _, err := a.KeepAlive(t.Context(), authority.LeaseID(foreign.ID), ""); !errors.Is(err, authority.ErrLeaseNotFound) {
		t.Fatalf("KeepAlive of a lease fencegw did not grant = %v, want ErrLeaseNotFound", err)
	}
	if err := a.Release(t.Context(), authority.LeaseID(foreign.ID), ""); !errors.Is(err, authority.ErrLeaseNotFound) {
		t.Fatalf("Release of a lease fencegw did not grant = %v, want ErrLeaseNotFound", err)
	}
}

// TestTokenEpochIsEtcds: a token's epoch is read in the transaction that
// creates the lock key, not taken from the gateway's memory, so a gateway
// that has not yet noticed an epoch bump hands out a token of the new
// epoch rather than one every write would refuse.
func TestTokenEpochIsEtcds(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t) // its own: the epoch key is global
	a := authority.NewEtcd(cli, testenv.KEK())
	before := acquire(t, a, "epoch/one", 0)
	if before.Token.Epoch != tokens.DefaultEpoch {
		t.Fatalf("token %s before any bump, want epoch %d", before.Token, tokens.DefaultEpoch)
	}
	_ = a.Release(t.Context(), before.ID, "")

	if err := a.SetEpoch(t.Context(), 3); err != nil { // etcd only: a still believes epoch 1
		t.Fatal(err)
	}
	if got := a.Epoch(); got != tokens.DefaultEpoch {
		t.Fatalf("the authority's own epoch moved to %d without reconciling", got)
	}
	after := acquire(t, a, "epoch/one", 0)
	defer a.Release(context.Background(), after.ID, "")
	if after.Token.Epoch != 3 || after.Token.Revision <= before.Token.Revision {
		t.Fatalf("token %s after etcd's epoch became 3 (before: %s), want 3:R with R > %d", after.Token, before.Token, before.Token.Revision)
	}
}

// TestObserveShowsEachHolderAsTheyHoldIt: observing reports a holder taken
// before an epoch bump with its own epoch (the token it really writes
// with), not the current one. Observe lists the waiters in order;
// ObserveAll counts them, reads the holders' TTLs, filters by prefix,
// skips keys that are not lock keys, and counts its limit in resources
// (TestObserveAllWalksResourcesNotKeys tries it harder).
func TestObserveShowsEachHolderAsTheyHoldIt(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t) // its own: the epoch key is global
	a := authority.NewEtcd(cli, testenv.KEK())
	ctx := t.Context()
	old := acquire(t, a, "obs/a", 0)
	defer a.Release(context.Background(), old.ID, "")
	if err := a.SetEpoch(ctx, 2); err != nil { // old keeps its epoch-1 token; the waiters queue in epoch 2
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	waitCtx, stop := context.WithCancel(ctx)
	defer stop()
	for range 2 {
		go func() {
			if l, err := a.Acquire(waitCtx, "obs/a", authority.AcquireOptions{TTL: 30 * time.Second, Wait: time.Minute}); err == nil {
				_ = a.Release(context.Background(), l.ID, "")
			}
			waiting <- struct{}{}
		}()
	}
	defer func() { stop(); <-waiting; <-waiting }()
	other := acquire(t, a, "obs/a b", 0) // escaped, it sorts before obs/a's keys' suffixes
	defer a.Release(context.Background(), other.ID, "")
	outside := acquire(t, a, "zzz", 0)
	defer a.Release(context.Background(), outside.ID, "")

	if !testenv.WaitFor(10*time.Second, func() bool {
		st, err := a.Observe(ctx, "obs/a")
		return err == nil && len(st.Waiters) == 2
	}) {
		t.Fatal("the two waiters never queued")
	}
	st, err := a.Observe(ctx, "obs/a")
	if err != nil || st.Holder == nil || st.Holder.Token != old.Token.Unsigned() {
		t.Fatalf("Observe holder %+v (%v), want the pre-bump token %s", st.Holder, err, old.Token)
	}
	if len(st.Waiters) != 2 || st.Waiting != 2 || st.Waiters[0].Token.Revision > st.Waiters[1].Token.Revision || st.Waiters[0].Token.Epoch != 2 {
		t.Errorf("Observe waiters %+v (%d); want two epoch-2 waiters in order", st.Waiters, st.Waiting)
	}
	// A key under the locks' prefix that is no lock key (no lease's part),
	// sorting first: skipped, and the walk goes on past it.
	if _, err := cli.Put(ctx, "/fencegw/locks/obs%2F0stray", "x"); err != nil {
		t.Fatal(err)
	}
	// A limit of 2: obs/a's three keys would have filled it, had it counted keys.
	all, truncated, err := a.ObserveAll(ctx, "obs/", 2)
	if err != nil || truncated || len(all) != 2 {
		t.Fatalf("ObserveAll = %+v, %t, %v; want obs/a b and obs/a, not truncated", all, truncated, err)
	}
	for _, st := range all {
		switch st.Resource {
		case "obs/a":
			// The holder's TTL is read; the waiters are counted, not listed.
			if st.Holder.Token != old.Token.Unsigned() || st.Waiting != 2 || len(st.Waiters) != 0 || st.Holder.TTL <= 0 {
				t.Errorf("obs/a: holder %+v, waiting %d, waiters %+v; want %s with a TTL and 2 waiting", st.Holder, st.Waiting, st.Waiters, old.Token)
			}
		case "obs/a b":
			if st.Holder.Token != other.Token.Unsigned() || st.Waiting != 0 || st.Holder.TTL <= 0 {
				t.Errorf("obs/a b: holder %+v, waiting %d", st.Holder, st.Waiting)
			}
		default:
			t.Errorf("unexpected resource %q", st.Resource)
		}
	}
	if all[0].Resource != "obs/a b" {
		t.Errorf("ObserveAll order: %+v; want obs/a b first (by lock key)", all)
	}
	cut, truncated, err := a.ObserveAll(ctx, "obs/", 1)
	if err != nil || !truncated || len(cut) != 1 || cut[0].Resource != "obs/a b" {
		t.Fatalf("ObserveAll with a limit of 1 = %+v, %t, %v; want only obs/a b, truncated", cut, truncated, err)
	}
	none, truncated, err := a.ObserveAll(ctx, "nothing/", 5)
	if err != nil || truncated || len(none) != 0 {
		t.Fatalf("ObserveAll of a prefix with no locks = %+v, %t, %v; want nothing", none, truncated, err)
	}
}

// TestWaiterWhoseLeaseEndsIsTold: a waiter's lease that expires or is
// revoked while it queues ends its wait at once, with ErrLeaseNotFound,
// instead of when the holder leaves.
func TestWaiterWhoseLeaseEndsIsTold(t *testing.T) {
	a, cli := newAuthority(t)
	holder := acquire(t, a, "waiter/gone", 0)
	defer a.Release(context.Background(), holder.ID, "")
	done := make(chan error, 1)
	go func() {
		_, err := a.Acquire(t.Context(), "waiter/gone", authority.AcquireOptions{TTL: 30 * time.Second, Wait: time.Minute})
		done <- err
	}()
	var waiter clientv3.LeaseID
	if !testenv.WaitFor(10*time.Second, func() bool {
		resp, err := cli.Get(t.Context(), "/fencegw/locks/waiter%2Fgone/", clientv3.WithPrefix())
		if err != nil || len(resp.Kvs) != 2 {
			return false
		}
		for _, kv := range resp.Kvs {
			if kv.Lease != int64(holder.ID) {
				waiter = clientv3.LeaseID(kv.Lease)
			}
		}
		return waiter != 0
	}) {
		t.Fatal("the waiter never queued")
	}
	if _, err := cli.Revoke(t.Context(), waiter); err != nil { // as if it expired: the gateway paused
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, authority.ErrLeaseNotFound) {
			t.Fatalf("the waiter's Acquire = %v, want ErrLeaseNotFound", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter whose lease ended kept waiting for the holder")
	}
}

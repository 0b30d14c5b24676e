package authority_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

func acquirePermit(ctx context.Context, a *authority.Etcd, sem string, permits int, wait time.Duration) (authority.Lease, error) {
	return a.Acquire(ctx, sem, authority.AcquireOptions{TTL: 5 * time.Second, Wait: wait, Permits: permits})
}

// waitForLine waits until n contenders are in sem's line.
func waitForLine(t *testing.T, cli *clientv3.Client, sem string, n int64) {
	t.Helper()
	if !testenv.WaitFor(10*time.Second, func() bool {
		resp, err := cli.Get(t.Context(), "/fencegw/queues/"+url.PathEscape(sem)+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count >= n
	}) {
		t.Fatalf("fewer than %d contenders in the line of %s", n, sem)
	}
}

// TestSemaphoreAtMostNInOrder: a semaphore of 2 grants two leases at
// once, each its own slot; the third and fourth wait, and are granted in
// arrival order, each in the slot the lease before it freed, with a
// token above that slot's last.
func TestSemaphoreAtMostNInOrder(t *testing.T) {
	a, cli := newAuthority(t)
	const sem = "sem/order"
	first, err := acquirePermit(t.Context(), a, sem, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	second, err := acquirePermit(t.Context(), a, sem, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if first.Token.Permit == second.Token.Permit || first.Token.Permit < 1 || second.Token.Permit > 2 {
		t.Fatalf("two holders in slots %d and %d: want 1 and 2", first.Token.Permit, second.Token.Permit)
	}
	for _, l := range []authority.Lease{first, second} {
		if want := tokens.PermitResource(sem, l.Token.Permit); l.Resource != want {
			t.Errorf("lease resource %q, want its slot's %q", l.Resource, want)
		}
		if err := a.Validate(t.Context(), l.Resource, "", l.Token, tokens.ValidateHolder); err != nil {
			t.Errorf("a live permit holder's token refused: %v", err)
		}
	}
	// Full: a third without a wait is told so, and leaves nothing behind.
	_, err = acquirePermit(t.Context(), a, sem, 2, 0)
	if !errors.Is(err, authority.ErrLocked) || !strings.Contains(err.Error(), "all 2 permits are held") {
		t.Fatalf("a third permit without a wait: %v; want ErrLocked, all 2 permits held", err)
	}

	granted := make(chan authority.Lease, 2)
	queue := func(name string) {
		go func() {
			l, err := acquirePermit(context.Background(), a, sem, 2, 20*time.Second)
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			granted <- l
		}()
	}
	waitForLine(t, cli, sem, 2)
	queue("third")
	waitForLine(t, cli, sem, 3)
	queue("fourth")
	waitForLine(t, cli, sem, 4)
	select {
	case l := <-granted:
		t.Fatalf("a permit (slot %d) was granted while both were held", l.Token.Permit)
	default:
	}

	if err := a.Release(t.Context(), first.ID, ""); err != nil {
		t.Fatal(err)
	}
	third := <-granted
	if third.Token.Permit != first.Token.Permit || third.Token.Compare(first.Token) <= 0 {
		t.Fatalf("after the first released: granted %v (slot %d), want slot %d with a token above %v", third.Token.Unsigned(), third.Token.Permit, first.Token.Permit, first.Token.Unsigned())
	}
	resp, err := cli.Get(t.Context(), "/fencegw/queues/"+url.PathEscape(sem)+"/", clientv3.WithLastCreate()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 || strings.HasSuffix(string(resp.Kvs[0].Key), third.ID.String()) {
		t.Fatalf("the newest in line is not the fourth: %v (FIFO: the third came first)", resp.Kvs)
	}
	select {
	case l := <-granted:
		t.Fatalf("the fourth was granted slot %d while the second and third held both", l.Token.Permit)
	default:
	}
	// The first's token is refused by holder validation: its slot has
	// another holder now.
	if err := a.Validate(t.Context(), first.Resource, "", first.Token, tokens.ValidateHolder); !errors.Is(err, tokens.ErrRejected) {
		t.Errorf("the first's token after its slot passed on: %v, want rejected", err)
	}
	if err := a.Release(t.Context(), second.ID, ""); err != nil {
		t.Fatal(err)
	}
	fourth := <-granted
	if fourth.Token.Permit != second.Token.Permit || fourth.Token.Compare(second.Token) <= 0 {
		t.Fatalf("after the second released: granted slot %d, %v; want slot %d above %v", fourth.Token.Permit, fourth.Token.Unsigned(), second.Token.Permit, second.Token.Unsigned())
	}
	for _, l := range []authority.Lease{third, fourth} {
		if err := a.Release(t.Context(), l.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSemaphoreExpiryFreesSlot: a permit holder that stops renewing loses
// its slot when etcd expires its lease, and the waiter gets that slot.
func TestSemaphoreExpiryFreesSlot(t *testing.T) {
	a, _ := newAuthority(t)
	const sem = "sem/expiry"
	paused, err := a.Acquire(t.Context(), sem, authority.AcquireOptions{TTL: authority.MinTTL, Permits: 1})
	if err != nil {
		t.Fatal(err)
	}
	next, err := acquirePermit(t.Context(), a, sem, 1, 30*time.Second) // waits for the expiry
	if err != nil {
		t.Fatal(err)
	}
	if next.Token.Permit != 1 || next.Token.Compare(paused.Token) <= 0 {
		t.Fatalf("after the expiry: %v in slot %d; want slot 1 above %v", next.Token.Unsigned(), next.Token.Permit, paused.Token.Unsigned())
	}
	if err := a.Release(t.Context(), next.ID, ""); err != nil {
		t.Fatal(err)
	}
}

// TestSemaphoreConcurrentHolders: many contenders for 3 permits, each
// holding a moment: never more than 3 at once, never two in one slot.
func TestSemaphoreConcurrentHolders(t *testing.T) {
	a, _ := newAuthority(t)
	const sem, permits, workers, rounds = "sem/busy", 3, 8, 3
	var (
		mu      sync.Mutex
		holding = map[int]authority.LeaseID{}
		most    int
		wg      sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				l, err := acquirePermit(context.Background(), a, sem, permits, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if other, taken := holding[l.Token.Permit]; taken {
					t.Errorf("slot %d granted to lease %s while lease %s held it", l.Token.Permit, l.ID, other)
				}
				holding[l.Token.Permit] = l.ID
				most = max(most, len(holding))
				mu.Unlock()

				mu.Lock()
				delete(holding, l.Token.Permit)
				mu.Unlock()
				if err := a.Release(context.Background(), l.ID, ""); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if most > permits || most == 0 {
		t.Fatalf("at most %d held at once, want 1 to %d", most, permits)
	}
}

// TestSemaphoreTokens: a permit's token is signed for its slot: it
// verifies there and nowhere else, a keepalive signs it again with its
// permit, and an acquisition retried with its key gets the same permit.
func TestSemaphoreTokens(t *testing.T) {
	a, _ := newAuthority(t)
	const sem = "sem/tokens"
	opts := authority.AcquireOptions{TTL: 5 * time.Second, Permits: 2, Owner: "worker", Key: "k1"}
	l, err := a.Acquire(t.Context(), sem, opts)
	if err != nil {
		t.Fatal(err)
	}
	other := tokens.PermitResource(sem, 3-l.Token.Permit)
	for _, tt := range []struct {
		name     string
		resource string
		tok      tokens.Token
		ok       bool
	}{
		{"its slot", l.Resource, l.Token, true},
		{"the other slot", other, l.Token, false},
		{"the semaphore's own name", sem, l.Token, false},
		{"as a lock's token", l.Resource, tokens.Token{Epoch: l.Token.Epoch, Revision: l.Token.Revision, Sig: l.Token.Sig}, false},
	} {
		err := a.Validate(t.Context(), tt.resource, "worker", tt.tok, tokens.ValidateFence)
		if (err == nil) != tt.ok {
			t.Errorf("%s: Validate = %v, want ok %t", tt.name, err, tt.ok)
		}
	}
	renewal, err := a.KeepAlive(t.Context(), l.ID, "worker")
	if err != nil {
		t.Fatal(err)
	}
	if renewal.Token.Permit != l.Token.Permit || renewal.Token.Compare(l.Token) != 0 {
		t.Errorf("keepalive token %v, want %v", renewal.Token.Unsigned(), l.Token.Unsigned())
	}
	if err := a.Validate(t.Context(), l.Resource, "worker", renewal.Token, tokens.ValidateFence); err != nil {
		t.Errorf("the re-signed permit token is refused: %v", err)
	}
	retry, err := a.Acquire(t.Context(), sem, opts)
	if err != nil {
		t.Fatal(err)
	}
	if retry.ID != l.ID || retry.Resource != l.Resource || retry.Token != l.Token {
		t.Errorf("a retry with the key got %s %s %v, want the first's %s %s %v", retry.ID, retry.Resource, retry.Token.Unsigned(), l.ID, l.Resource, l.Token.Unsigned())
	}
	if err := a.Release(t.Context(), l.ID, "worker"); err != nil {
		t.Fatal(err)
	}
}

// TestSemaphoreBadPermits: a permit count out of range, or with a
// lock-delay, is refused before anything is written to etcd.
func TestSemaphoreBadPermits(t *testing.T) {
	a, cli := newAuthority(t)
	const sem = "sem/bad"
	long := sem + "/" + strings.Repeat("x", 255-len(sem)-1) // a resource name of the longest kind, whose slot names are longer
	for _, tt := range []struct {
		name     string
		resource string
		opts     authority.AcquireOptions
		msg      string
	}{
		{"negative", sem, authority.AcquireOptions{TTL: 5 * time.Second, Permits: -1}, "-1, want 1 to 1000"},
		{"absurd", sem, authority.AcquireOptions{TTL: 5 * time.Second, Permits: 1001}, "1001, want 1 to 1000"},
		{"with lock-delay", sem, authority.AcquireOptions{TTL: 5 * time.Second, Permits: 2, LockDelay: time.Second}, "no lock-delay"},
		{"slot names too long", long, authority.AcquireOptions{TTL: 5 * time.Second, Permits: 2}, "the name of its slot 2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before, err := cli.Leases(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.Acquire(t.Context(), tt.resource, tt.opts)
			if !errors.Is(err, authority.ErrBadPermits) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Acquire = %v, want ErrBadPermits with %q", err, tt.msg)
			}
			after, err := cli.Leases(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			line, err := cli.Get(t.Context(), "/fencegw/queues/"+url.PathEscape(tt.resource)+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				t.Fatal(err)
			}
			if len(after.Leases) > len(before.Leases) || line.Count != 0 {
				t.Fatalf("a refused acquisition left %d leases (was %d) and %d keys in line", len(after.Leases), len(before.Leases), line.Count)
			}
		})
	}
}

// TestSemaphoreWaitersHoldNoKeyBack: a lease waiting in a semaphore's line
// holds no token yet, so it keeps no signing key from being retired (a
// busy semaphore always has one); granted after the retire, its token is
// signed by a key in service.
func TestSemaphoreWaitersHoldNoKeyBack(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t) // retiring keys would refuse other tests' tokens
	a := authority.NewEtcd(cli, testenv.KEK())
	ctx := t.Context()
	const sem = "retire/pool"
	opts := authority.AcquireOptions{TTL: 30 * time.Second, Permits: 1}
	first, err := a.Acquire(ctx, "retire/warm-up", authority.AcquireOptions{TTL: 5 * time.Second}) // the first key
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, first.ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.RotateKey(ctx, 0); err != nil {
		t.Fatal(err)
	}
	holder, err := a.Acquire(ctx, sem, opts)
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan authority.Lease, 1)
	go func() {
		o := opts
		o.Wait = 30 * time.Second
		l, err := a.Acquire(ctx, sem, o)
		if err != nil {
			t.Error(err)
		}
		granted <- l
	}()
	if !testenv.WaitFor(10*time.Second, func() bool {
		line, err := cli.Get(ctx, "/fencegw/queues/"+url.PathEscape(sem)+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && line.Count == 2
	}) {
		t.Fatal("the second contender never joined the line")
	}
	plan, err := a.RetireKeys(ctx, authority.RetireOptions{Keep: 1})
	if err != nil || len(plan) != 1 || !plan[0].Retired || plan[0].LiveLeases != 0 {
		t.Fatalf("retire of the key no lease holds a token of, with a permit waiter in line = %+v, %v; want it retired", plan, err)
	}
	if err := a.Release(ctx, holder.ID, ""); err != nil {
		t.Fatal(err)
	}
	next := <-granted
	if next.ID == 0 {
		t.FailNow()
	}
	if err := a.Validate(ctx, next.Resource, "", next.Token, tokens.ValidateFence); err != nil {
		t.Fatalf("the waiter's token, granted after the retire: %v", err)
	}
}

// TestSemaphoreWaiterLeaseInfo: a contender in a semaphore's line is a
// lease an operator can find (LeaseInfo: waiting for the semaphore, no
// token yet) and revoke; its acquisition then ends, and its line key with
// it. A holder's info names its slot and permit.
func TestSemaphoreWaiterLeaseInfo(t *testing.T) {
	a, cli := newAuthority(t)
	const sem = "sem/info"
	holder, err := a.Acquire(t.Context(), sem, authority.AcquireOptions{TTL: 30 * time.Second, Permits: 1, Owner: "h"})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := a.Acquire(context.Background(), sem, authority.AcquireOptions{TTL: 30 * time.Second, Wait: time.Minute, Permits: 1, Owner: "w"})
		ended <- err
	}()
	waitForLine(t, cli, sem, 2)
	line := "/fencegw/queues/" + url.PathEscape(sem) + "/"
	newest, err := cli.Get(t.Context(), line, clientv3.WithLastCreate()...)
	if err != nil || len(newest.Kvs) != 1 {
		t.Fatalf("the newest in line: %v, %v", newest, err)
	}
	id, err := authority.ParseLeaseID(strings.TrimPrefix(string(newest.Kvs[0].Key), line))
	if err != nil {
		t.Fatal(err)
	}
	info, err := a.LeaseInfo(t.Context(), id)
	if err != nil || info.Resource != sem || !info.Waiting || !info.Token.IsZero() || info.Owner != "w" {
		t.Fatalf("the waiter's info = %+v, %v; want waiting for %s, no token, owner w", info, err, sem)
	}
	hinfo, err := a.LeaseInfo(t.Context(), holder.ID)
	if err != nil || hinfo.Resource != holder.Resource || hinfo.Waiting || hinfo.Token != holder.Token.Unsigned() {
		t.Fatalf("the holder's info = %+v, %v; want %s holding %v", hinfo, err, holder.Resource, holder.Token.Unsigned())
	}
	if err := a.Revoke(t.Context(), id, "operator", "stuck in line"); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; !errors.Is(err, authority.ErrLeaseNotFound) {
		t.Fatalf("the revoked waiter's acquisition ended with %v, want ErrLeaseNotFound", err)
	}
	if resp, err := cli.Get(t.Context(), line, clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 1 {
		t.Fatalf("line after the revoke: %v keys, %v; want the holder's only", resp.Count, err)
	}
	if _, err := a.LeaseInfo(t.Context(), id); !errors.Is(err, authority.ErrLeaseNotFound) {
		t.Fatalf("the revoked waiter's info: %v, want ErrLeaseNotFound", err)
	}
	if err := a.Release(t.Context(), holder.ID, "h"); err != nil {
		t.Fatal(err)
	}
}

// TestSemaphoreSlotWaitKeepsLeaseAlive: an admitted contender that finds
// every slot taken by a key that is no permit holder's (a lock on the
// slot's own name) waits for one to go, and its lease outlives its TTL
// meanwhile; it gets the slot when the lock is released.
func TestSemaphoreSlotWaitKeepsLeaseAlive(t *testing.T) {
	a, cli := newAuthority(t)
	// A TTL that a busy machine's stalls (the process, its embedded etcd)
	// do not outlast between two renewals at a third of it: what is
	// under test is that the wait renews at all.
	const sem, ttl = "sem/slotwait", 12 * time.Second
	squatter, err := a.Acquire(t.Context(), tokens.PermitResource(sem, 1), authority.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   authority.Lease
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := a.Acquire(context.Background(), sem, authority.AcquireOptions{TTL: ttl, Wait: time.Minute, Permits: 1})
		done <- result{l, err}
	}()
	waitForLine(t, cli, sem, 1)
	line := "/fencegw/queues/" + url.PathEscape(sem) + "/"
	resp, err := cli.Get(t.Context(), line, clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the line: %v, %v", resp, err)
	}
	id := clientv3.LeaseID(resp.Kvs[0].Lease)
	// Renewed while it waits: its remaining TTL, read again and again,
	// goes back up twice (only a keepalive raises it). Without renewal it
	// only falls, and the lease ends.
	lowest, renewals := ttl, 0
	if !testenv.WaitFor(time.Minute, func() bool {
		left, err := cli.TimeToLive(t.Context(), id)
		if err != nil || left.TTL < 0 {
			t.Fatalf("the waiting contender's lease ended (%v, %v) after %d renewals; its TTL is %s", left, err, renewals, ttl)
		}
		now := time.Duration(left.TTL) * time.Second
		if now > lowest {
			renewals++
		}
		lowest = now
		return renewals >= 2
	}) {
		t.Fatal("never saw the waiting contender's lease renewed")
	}
	select {
	case r := <-done:
		t.Fatalf("granted %v, %v while the slot's name was locked", r.l, r.err)
	default:
	}
	if err := a.Release(t.Context(), squatter.ID, ""); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.l.Token.Permit != 1 {
		t.Fatalf("after the lock on the slot went: %+v, %v; want slot 1", r.l, r.err)
	}
	if err := a.Release(t.Context(), r.l.ID, ""); err != nil {
		t.Fatal(err)
	}
}

// TestPermitWaiters: the leases waiting in semaphores' lines, holders
// left out, by semaphore and in line order, under a prefix; a limit
// truncates.
func TestPermitWaiters(t *testing.T) {
	a, cli := newAuthority(t)
	const pfx = "waiters/"
	var holders []authority.Lease
	for _, sem := range []string{pfx + "b", pfx + "a"} {
		h, err := a.Acquire(t.Context(), sem, authority.AcquireOptions{TTL: 30 * time.Second, Permits: 1, Owner: "holder"})
		if err != nil {
			t.Fatal(err)
		}
		holders = append(holders, h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 3)
	for _, c := range []struct {
		sem, owner string
		inLine     int64 // once it joined
	}{{pfx + "a", "w1", 2}, {pfx + "a", "w2", 3}, {pfx + "b", "w3", 2}} {
		go func() {
			_, err := a.Acquire(ctx, c.sem, authority.AcquireOptions{TTL: 30 * time.Second, Wait: time.Minute, Permits: 1, Owner: c.owner})
			ended <- err
		}()
		waitForLine(t, cli, c.sem, c.inLine)
	}
	// The waiters give up before the holders release: none is granted.
	defer func() {
		cancel()
		for range 3 {
			<-ended
		}
		for _, h := range holders {
			if err := a.Release(t.Context(), h.ID, "holder"); err != nil {
				t.Error(err)
			}
		}
	}()
	ws, truncated, err := a.PermitWaiters(t.Context(), pfx, 10)
	if err != nil || truncated {
		t.Fatalf("PermitWaiters: %v, truncated %t", err, truncated)
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.Semaphore+" "+w.Owner)
	}
	if want := []string{pfx + "a w1", pfx + "a w2", pfx + "b w3"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("waiters %v, want %v", got, want)
	}
	info, err := a.LeaseInfo(t.Context(), ws[0].LeaseID)
	if err != nil || !info.Waiting || info.Resource != pfx+"a" {
		t.Fatalf("the first waiter's info: %+v, %v", info, err)
	}
	if ws, truncated, err := a.PermitWaiters(t.Context(), pfx, 2); err != nil || !truncated || len(ws) != 2 {
		t.Fatalf("limit 2: %d waiters, truncated %t, %v", len(ws), truncated, err)
	}
	if ws, _, err := a.PermitWaiters(t.Context(), pfx+"b", 10); err != nil || len(ws) != 1 || ws[0].Owner != "w3" {
		t.Fatalf("under %sb: %+v, %v", pfx, ws, err)
	}
}

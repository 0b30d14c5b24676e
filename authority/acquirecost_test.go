package authority_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// etcdCalls records the calls made through a client to etcd, one word
// each, a write (what etcd proposes through Raft) marked with a "+":
// "+Grant", "+Txn", "Get". Watches and keepalive streams are not calls.
type etcdCalls struct {
	mu    sync.Mutex
	calls []string
	// together, if set, holds the calls it names as they are sent, until
	// it has them all (meet).
	together atomic.Pointer[meeting]
}

// A meeting of calls holds each that comes until want have come, or a
// deadlock's bound has passed; missed says it had to give up. Calls sent
// one after the other never all come.
type meeting struct {
	of      map[string]bool
	want    int
	arrived chan struct{}
	all     chan struct{}
	once    sync.Once
	missed  atomic.Bool
}

// newMeeting is a meeting of the calls named.
func newMeeting(calls ...string) *meeting {
	m := &meeting{of: map[string]bool{}, want: len(calls), arrived: make(chan struct{}, len(calls)), all: make(chan struct{})}
	for _, c := range calls {
		m.of[c] = true
	}
	return m
}

func (m *meeting) meet() {
	select {
	case m.arrived <- struct{}{}:
		if len(m.arrived) == m.want {
			m.once.Do(func() { close(m.all) })
		}
	default: // every place taken: the meeting is over
	}
	select {
	case <-m.all:
	case <-time.After(10 * time.Second): // a deadlock's bound, not a measure
		m.missed.Store(true)
	}
}

// add records call; a call the meeting named waits there.
func (c *etcdCalls) add(call string, write bool) {
	if write {
		call = "+" + call
	}
	c.mu.Lock()
	c.calls = append(c.calls, call)
	c.mu.Unlock()
	if m := c.together.Load(); m != nil && m.of[call] {
		m.meet()
	}
}

// take returns the calls made since the last take.
func (c *etcdCalls) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls := c.calls
	c.calls = nil
	slices.Sort(calls) // calls sent at once have no order
	return calls
}

// proposals counts the writes among calls.
func proposals(calls []string) int {
	n := 0
	for _, c := range calls {
		if c[0] == '+' {
			n++
		}
	}
	return n
}

// countCalls makes cli's KV and Lease calls go through c.
func countCalls(cli *clientv3.Client) *etcdCalls {
	c := &etcdCalls{}
	cli.KV = callCountingKV{KV: cli.KV, c: c}
	cli.Lease = callCountingLease{Lease: cli.Lease, c: c}
	return c
}

type callCountingKV struct {
	clientv3.KV
	c *etcdCalls
}

func (kv callCountingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	kv.c.add("Get", false)
	return kv.KV.Get(ctx, key, opts...)
}

func (kv callCountingKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	kv.c.add("Put", true)
	return kv.KV.Put(ctx, key, val, opts...)
}

func (kv callCountingKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	kv.c.add("Delete", true)
	return kv.KV.Delete(ctx, key, opts...)
}

func (kv callCountingKV) Txn(ctx context.Context) clientv3.Txn {
	return &callCountingTxn{Txn: kv.KV.Txn(ctx), c: kv.c}
}

// callCountingTxn is a write if any operation of either branch is: etcd
// serves a transaction of reads only without proposing it.
type callCountingTxn struct {
	clientv3.Txn
	c     *etcdCalls
	write bool
}

func (t *callCountingTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.Txn = t.Txn.If(cs...); return t }
func (t *callCountingTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.see(ops)
	t.Txn = t.Txn.Then(ops...)
	return t
}
func (t *callCountingTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.see(ops)
	t.Txn = t.Txn.Else(ops...)
	return t
}
func (t *callCountingTxn) see(ops []clientv3.Op) {
	for _, op := range ops {
		t.write = t.write || !op.IsGet()
	}
}
func (t *callCountingTxn) Commit() (*clientv3.TxnResponse, error) {
	t.c.add("Txn", t.write)
	return t.Txn.Commit()
}

type callCountingLease struct {
	clientv3.Lease
	c *etcdCalls
}

func (l callCountingLease) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	l.c.add("Grant", true)
	return l.Lease.Grant(ctx, ttl)
}

func (l callCountingLease) Revoke(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseRevokeResponse, error) {
	l.c.add("Revoke", true)
	return l.Lease.Revoke(ctx, id)
}

func (l callCountingLease) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	l.c.add("KeepAliveOnce", false)
	return l.Lease.KeepAliveOnce(ctx, id)
}

func (l callCountingLease) TimeToLive(ctx context.Context, id clientv3.LeaseID, opts ...clientv3.LeaseOption) (*clientv3.LeaseTimeToLiveResponse, error) {
	l.c.add("TimeToLive", false)
	return l.Lease.TimeToLive(ctx, id, opts...)
}

// mutexCycle is the yardstick: etcd's own recipe, a Session and a Mutex
// locked, unlocked and closed; it returns the calls of the lock (the
// session's grant and Lock) and of the unlock (Unlock and Close).
func mutexCycle(t *testing.T, cli *clientv3.Client, c *etcdCalls) (lock, unlock []string) {
	t.Helper()
	c.take()
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	m := concurrency.NewMutex(s, "/fencegw-test/mutex/"+t.Name())
	if err := m.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
	lock = c.take()
	if err := m.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return lock, c.take()
}

// TestAFreeLockCostsWhatEtcdsMutexDoes: a lock nobody holds is taken
// with a lease's grant and one transaction, which records the grant too,
// and released with a transaction and the lease's revoke: two round
// trips and two proposals each way, as etcd's Session and Mutex take and
// give up a free lock. It took three transactions and a grant: the hold
// and holder records were a transaction of their own after the lock's.
func TestAFreeLockCostsWhatEtcdsMutexDoes(t *testing.T) {
	cli := testenv.EtcdClient(t)
	calls := countCalls(cli)
	a := authority.NewEtcd(cli, testenv.KEK())
	mutexLock, mutexUnlock := mutexCycle(t, cli, calls)
	opts := authority.AcquireOptions{TTL: 5 * time.Second, Owner: "billing", Observer: "replica-1", MaxHold: time.Minute}
	_, _ = acquireAndRelease(t, a, calls, "cost/warm-up", opts) // loads the signing keys and reads the epoch
	acquire, release := acquireAndRelease(t, a, calls, "cost/free", opts)
	if want := []string{"+Grant", "+Txn"}; !slices.Equal(acquire, want) {
		t.Errorf("acquiring a free lock called etcd %v, want %v (etcd's Mutex: %v)", acquire, want, mutexLock)
	}
	if want := []string{"+Revoke", "+Txn"}; !slices.Equal(release, want) {
		t.Errorf("releasing it called etcd %v, want %v (etcd's Mutex: %v)", release, want, mutexUnlock)
	}
	if got, mutex := proposals(acquire)+proposals(release), proposals(mutexLock)+proposals(mutexUnlock); got > mutex {
		t.Errorf("a lock cycle proposed %d times, etcd's Mutex %d", got, mutex)
	}
}

// TestTheReadsAGrantNeedsGoOutWithIt: the owner's count of leases and the
// record of an earlier attempt with the acquisition key are read while
// the lease is granted, not before it: a keyed acquisition of a client
// with a bound on its leases still takes two round trips and two
// proposals when the lock is free. Each read was a round trip of its own.
func TestTheReadsAGrantNeedsGoOutWithIt(t *testing.T) {
	cli := testenv.EtcdClient(t)
	calls := countCalls(cli)
	a := authority.NewEtcd(cli, testenv.KEK())
	opts := authority.AcquireOptions{TTL: 5 * time.Second, Owner: "billing", MaxHeld: 100, Key: "first"}
	_, _ = acquireAndRelease(t, a, calls, "cost/warm-up", opts)
	// The grant and the two reads are each held until all three are
	// out: sent one after the other, the first would wait for the others
	// in vain.
	calls.together.Store(newMeeting("+Grant", "Get", "Get"))
	opts.Key = "second"
	acquire, release := acquireAndRelease(t, a, calls, "cost/keyed", opts)
	if want := []string{"+Grant", "+Txn", "Get", "Get"}; !slices.Equal(acquire, want) {
		t.Errorf("a keyed acquisition of a free lock called etcd %v, want %v: the grant, its reads beside it, and the lock's transaction", acquire, want)
	}
	if calls.together.Load().missed.Load() {
		t.Error("the grant and the reads it needs went out one after the other")
	}
	if got := proposals(acquire) + proposals(release); got > 4 {
		t.Errorf("a keyed lock cycle proposed %d times, etcd's Mutex 4", got)
	}
}

// acquireAndRelease takes resource's lock with opts and releases it,
// and returns the calls each made.
func acquireAndRelease(t *testing.T, a *authority.Etcd, calls *etcdCalls, resource string, opts authority.AcquireOptions) (acquire, release []string) {
	t.Helper()
	calls.take()
	l, err := a.Acquire(t.Context(), resource, opts)
	if err != nil {
		t.Fatalf("Acquire %s: %v", resource, err)
	}
	acquire = calls.take()
	if err := a.Release(t.Context(), l.ID, opts.Owner); err != nil {
		t.Fatalf("Release %s: %v", resource, err)
	}
	return acquire, calls.take()
}

// TestAWaitedLockIsRecordedOnce: a lock taken after a wait costs its
// lease, the transaction that puts it in line (and claims its key), and
// one that records the grant once it has the lock, sent with the lease's
// renewal: three proposals. The key's claim, the hold-time mark and the
// grant's records were a transaction each, after the renewal.
func TestAWaitedLockIsRecordedOnce(t *testing.T) {
	holders := authority.NewEtcd(testenv.EtcdClient(t), testenv.KEK())
	cli := testenv.EtcdClient(t)
	calls := countCalls(cli)
	a := authority.NewEtcd(cli, testenv.KEK())
	const res = "cost/waited"
	opts := authority.AcquireOptions{TTL: 5 * time.Second, Wait: time.Minute, Owner: "billing", Observer: "replica-1", MaxHold: time.Minute, Key: "warm-up"}
	_, _ = acquireAndRelease(t, a, calls, "cost/warm-up", opts)
	opts.Key = "waited"
	holder, err := holders.Acquire(t.Context(), res, authority.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	calls.take()
	granted := make(chan error, 1)
	go func() {
		_, err := a.Acquire(context.Background(), res, opts)
		granted <- err
	}()
	if !testenv.WaitFor(30*time.Second, func() bool {
		resp, err := cli.Get(t.Context(), "/fencegw/locks/cost%2Fwaited/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 2
	}) {
		t.Fatal("the waiter never joined the line")
	}
	// The renewal and the grant's record go out together: one after the
	// other, the first would wait for the second in vain.
	together := newMeeting("KeepAliveOnce", "+Txn")
	calls.together.Store(together)
	if err := holders.Release(t.Context(), holder.ID, ""); err != nil {
		t.Fatal(err)
	}
	if err := <-granted; err != nil {
		t.Fatal(err)
	}
	if together.missed.Load() {
		t.Error("the waiter's lease was renewed and its grant recorded one after the other")
	}
	acquire := slices.DeleteFunc(calls.take(), func(c string) bool { return c == "Get" }) // the test's own, and the wait's
	if got := proposals(acquire); got != 3 {
		t.Errorf("a keyed lock taken after a wait proposed %d times (%v), want 3: its lease, its place in line, its grant", got, acquire)
	}
}

// TestAFreePermitCostsItsLineAndItsSlot: a permit of a semaphore with a
// free slot costs its lease, the transaction that puts it in line
// (reading the line ahead of it and the slots), and the one that claims
// its slot and records the grant. Reading the line and the slots, and
// recording the grant, were round trips of their own.
func TestAFreePermitCostsItsLineAndItsSlot(t *testing.T) {
	cli := testenv.EtcdClient(t)
	calls := countCalls(cli)
	a := authority.NewEtcd(cli, testenv.KEK())
	opts := authority.AcquireOptions{TTL: 5 * time.Second, Owner: "billing", Observer: "replica-1", Permits: 2}
	_, _ = acquireAndRelease(t, a, calls, "cost/warm-up-pool", opts)
	acquire, release := acquireAndRelease(t, a, calls, "cost/pool", opts)
	if want := []string{"+Grant", "+Txn", "+Txn"}; !slices.Equal(acquire, want) {
		t.Errorf("a free permit called etcd %v, want %v", acquire, want)
	}
	if want := []string{"+Revoke", "+Txn"}; !slices.Equal(release, want) {
		t.Errorf("releasing it called etcd %v, want %v", release, want)
	}
}

package authority_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// failSecondGrant holds the second lease grant until release, then
// fails it: etcd going away as a lock-delay's lease is granted.
type failSecondGrant struct {
	clientv3.Lease
	grants  atomic.Int32
	held    chan struct{}
	release chan struct{}
}

func (l *failSecondGrant) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	if l.grants.Add(1) == 2 {
		close(l.held)
		<-l.release
		return nil, errors.New("etcd went away")
	}
	return l.Lease.Grant(ctx, ttl)
}

// signalGets closes reread at the second read of an acquisition record:
// a retry's look-up, then its join's read of a record not yet granted.
type signalGets struct {
	clientv3.KV
	reads  atomic.Int32
	reread chan struct{}
}

func (kv *signalGets) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp, err := kv.KV.Get(ctx, key, opts...)
	if strings.HasPrefix(key, "/fencegw/acquisitions/") && kv.reads.Add(1) == 2 {
		close(kv.reread)
	}
	return resp, err
}

// TestAKeyedLockWithADelayIsGrantedOnceItsDelayIsRecorded: a keyed lock
// with a lock-delay, granted in the transaction that puts it in line, is
// recorded as granted for its key only once its last-holder record is
// made. A retry meanwhile waits, and when that record cannot be made
// (etcd gone as the delay's lease is granted) and the first attempt gives
// its lease up, the retry takes a lease of its own. Recorded as granted
// at once, the retry was answered with the lease the first attempt then
// gave up.
func TestAKeyedLockWithADelayIsGrantedOnceItsDelayIsRecorded(t *testing.T) {
	cli := testenv.EtcdClient(t)
	grants := &failSecondGrant{Lease: cli.Lease, held: make(chan struct{}), release: make(chan struct{})}
	gets := &signalGets{KV: cli.KV, reread: make(chan struct{})}
	cli.Lease, cli.KV = grants, gets
	a := authority.NewEtcd(cli, testenv.KEK())
	opts := authority.AcquireOptions{TTL: 30 * time.Second, Wait: time.Minute, Owner: "billing", Key: "with-a-delay", LockDelay: time.Second}
	const res = "delay/keyed"
	first := make(chan error, 1)
	go func() {
		_, err := a.Acquire(context.Background(), res, opts)
		first <- err
	}()
	<-grants.held
	type result struct {
		l   authority.Lease
		err error
	}
	retried := make(chan result, 1)
	go func() {
		l, err := a.Acquire(context.Background(), res, opts)
		retried <- result{l, err}
	}()
	var early *result
	select {
	case r := <-retried:
		early = &r
	case <-gets.reread: // it waits for the first attempt's grant
	}
	close(grants.release)
	if err := <-first; err == nil {
		t.Fatal("the first attempt was granted, its lock-delay's lease refused")
	}
	r := early
	if r == nil {
		got := <-retried
		r = &got
	}
	if r.err != nil {
		t.Fatalf("the retry: %v", r.err)
	}
	defer a.Release(context.Background(), r.l.ID, opts.Owner)
	ttl, err := cli.TimeToLive(t.Context(), clientv3.LeaseID(r.l.ID))
	if err != nil || ttl.TTL <= 0 {
		t.Fatalf("the retry was answered with lease %s, which is gone (%v, %v): the first attempt's, given up", r.l.ID, ttl, err)
	}
}

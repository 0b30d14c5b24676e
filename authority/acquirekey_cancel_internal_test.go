package authority

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// cancelAtGrantRecord is a KV whose first write of a granted acquisition
// record commits and then cancels the caller's request, as a client that
// hangs up that instant does: the commit stands, and a Txn under the
// request's context reports it failed.
type cancelAtGrantRecord struct {
	clientv3.KV
	cancel context.CancelFunc
}

func (kv cancelAtGrantRecord) Txn(ctx context.Context) clientv3.Txn {
	return &grantRecordTxn{Txn: kv.KV.Txn(ctx), ctx: ctx, cancel: kv.cancel}
}

type grantRecordTxn struct {
	clientv3.Txn
	ctx    context.Context
	cancel context.CancelFunc
	hit    bool
}

func (t *grantRecordTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.Txn = t.Txn.If(cs...); return t }
func (t *grantRecordTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}
func (t *grantRecordTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	for _, op := range ops {
		if op.IsPut() && strings.HasPrefix(string(op.KeyBytes()), acquisitionsPrefix) && strings.Contains(string(op.ValueBytes()), `"granted":true`) {
			t.hit = true
		}
	}
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *grantRecordTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := t.Txn.Commit()
	if t.hit && err == nil && resp.Succeeded { // the record is in Then: it was written
		t.cancel()
		if t.ctx.Err() != nil {
			return nil, t.ctx.Err()
		}
	}
	return resp, err
}

// TestAKeyedGrantOutlivesItsCallersHangUp: a client that hangs up just as
// its keyed lease's grant is recorded leaves the lease to its retry. It
// used to be abandoned while a retry had already read the record as
// granted: the retry was answered 201 with a lease that was gone.
func TestAKeyedGrantOutlivesItsCallersHangUp(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	req, hangUp := context.WithCancel(t.Context())
	defer hangUp()
	cli.KV = cancelAtGrantRecord{KV: cli.KV, cancel: hangUp}
	a := NewEtcd(cli, testenv.KEK())
	opts := AcquireOptions{TTL: 30 * time.Second, Owner: "billing", Key: "acq-1"}
	first, err := a.Acquire(req, "account/acct-1", opts)
	if err != nil {
		t.Fatalf("the first attempt, its caller gone as its grant was recorded: %v; want its lease granted all the same", err)
	}
	retry, err := a.Acquire(t.Context(), "account/acct-1", opts)
	if err != nil {
		t.Fatal(err)
	}
	if retry.ID != first.ID {
		t.Fatalf("the retry got lease %s, the first attempt %s: want the one lease", retry.ID, first.ID)
	}
	ttl, err := cli.TimeToLive(t.Context(), clientv3.LeaseID(first.ID))
	if err != nil || ttl.TTL <= 0 {
		t.Fatalf("the lease the retry was given: ttl %v, %v; want it alive", ttl, err)
	}
}

// renewAfterHangUp holds each single renewal until the caller hung up.
type renewAfterHangUp struct {
	clientv3.Lease
	hungUp <-chan struct{}
}

func (l renewAfterHangUp) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	select {
	case <-l.hungUp:
	case <-time.After(10 * time.Second): // a deadlock's bound
	}
	return l.Lease.KeepAliveOnce(ctx, id)
}

// TestAWaitedKeyedGrantOutlivesItsCallersHangUp: a keyed lease granted
// after a wait is renewed as its grant is recorded; a client that hangs
// up as the record commits cuts neither short, and the lease is its
// retry's. The renewal under the request's context failed, and the
// lease a retry could already have read as granted was given up.
func TestAWaitedKeyedGrantOutlivesItsCallersHangUp(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	holders := NewEtcd(cli, testenv.KEK())
	holder, err := holders.Acquire(t.Context(), "account/acct-1", AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	req, hangUp := context.WithCancel(t.Context())
	defer hangUp()
	waiting := testenv.NewEtcdClient(t, cli.Endpoints())
	waiting.KV = cancelAtGrantRecord{KV: waiting.KV, cancel: hangUp}
	waiting.Lease = renewAfterHangUp{Lease: waiting.Lease, hungUp: req.Done()}
	a := NewEtcd(waiting, testenv.KEK())
	opts := AcquireOptions{TTL: 30 * time.Second, Wait: time.Minute, Owner: "billing", Key: "acq-1"}
	granted := make(chan error, 1)
	var first Lease
	go func() {
		var err error
		first, err = a.Acquire(req, "account/acct-1", opts)
		granted <- err
	}()
	if !testenv.WaitFor(30*time.Second, func() bool {
		resp, err := cli.Get(t.Context(), lockKeyPrefix("account/acct-1"), clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 2
	}) {
		t.Fatal("the keyed attempt never joined the line")
	}
	if err := holders.Release(t.Context(), holder.ID, ""); err != nil {
		t.Fatal(err)
	}
	if err := <-granted; err != nil {
		t.Fatalf("the keyed attempt, its caller gone as its grant was recorded: %v; want its lease granted all the same", err)
	}
	ttl, err := cli.TimeToLive(t.Context(), clientv3.LeaseID(first.ID))
	if err != nil || ttl.TTL <= 0 {
		t.Fatalf("the lease granted: ttl %v, %v; want it alive", ttl, err)
	}
}

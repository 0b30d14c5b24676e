package authority_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/devserver/etcdserver"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestWaiterGivenUpWhileEtcdIsDownIsRevokedLater: a wait that runs out
// while etcd is down is answered unavailable (not "locked": nobody can say
// who holds the lock), and its lease, which cannot be revoked then, is
// revoked once etcd is back: it must not stay in line, take the lock in
// its turn and hold it for its TTL with a lease ID no client knows.
func TestWaiterGivenUpWhileEtcdIsDownIsRevokedLater(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	srv, err := etcdserver.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	cli := testenv.NewEtcdClient(t, srv.Endpoints())
	a := authority.NewEtcd(cli, testenv.KEK())
	const res = "abandon/one"
	holder, err := a.Acquire(ctx, res, authority.AcquireOptions{TTL: authority.MaxTTL})
	if err != nil {
		t.Fatal(err)
	}

	gaveUp := make(chan error, 1)
	go func() {
		// The longest TTL: were it not revoked, it would outlast the test.
		// The wait is far longer than etcd takes to stop on a busy machine,
		// so that it runs out while etcd is down.
		_, err := a.Acquire(ctx, res, authority.AcquireOptions{TTL: authority.MaxTTL, Wait: 30 * time.Second})
		gaveUp <- err
	}()
	if !testenv.WaitFor(30*time.Second, func() bool {
		st, err := a.Observe(ctx, res)
		return err == nil && st.Waiting == 1
	}) {
		t.Fatal("the waiter never queued")
	}

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-gaveUp; !errors.Is(err, authority.ErrUnavailable) || errors.Is(err, authority.ErrLocked) {
		t.Fatalf("a wait that ran out while etcd was down: %v, want unavailable, not locked", err)
	}

	srv, err = etcdserver.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cli.SetEndpoints(srv.Endpoints()...)
	if !testenv.WaitFor(time.Minute, func() bool {
		st, err := a.Observe(ctx, res)
		return err == nil && st.Waiting == 0
	}) {
		t.Fatal("the given-up waiter is still in line after etcd came back")
	}
	if st, err := a.Observe(ctx, res); err != nil || st.Holder == nil || st.Holder.Token != holder.Token.Unsigned() {
		t.Fatalf("after etcd came back: %+v, %v; want the holder still holding", st, err)
	}
	if err := a.Release(ctx, holder.ID, ""); err != nil {
		t.Fatal(err)
	}
	next := acquire(t, a, res, 0) // free: no forgotten waiter took it
	_ = a.Release(ctx, next.ID, "")
}

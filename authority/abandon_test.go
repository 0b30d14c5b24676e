package authority_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/etcdserver"
	"github.com/fencegw/fencegw/internal/testenv"
)

// TestWaiterGivenUpWhileEtcdIsDownIsRevokedLater: a waiter whose
// acquisition ends while etcd is down cannot be revoked then. It must be
// revoked once etcd is back, not stay in line, take the lock in its turn
// and hold it for its TTL with a lease ID no client knows.
func TestWaiterGivenUpWhileEtcdIsDownIsRevokedLater(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	srv, err := etcdserver.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	cli := testenv.NewEtcdClient(t, srv.Endpoints())
	a := authority.NewEtcd(cli)
	const res = "abandon/one"
	holder, err := a.Acquire(ctx, res, authority.AcquireOptions{TTL: authority.MaxTTL})
	if err != nil {
		t.Fatal(err)
	}

	waitCtx, giveUp := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		// The longest TTL: were it not revoked, it would outlast the test.
		_, err := a.Acquire(waitCtx, res, authority.AcquireOptions{TTL: authority.MaxTTL, Wait: authority.MaxWait})
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
	giveUp() // its client goes away while etcd is down: the revoke fails
	if err := <-gaveUp; err == nil {
		t.Fatal("the waiter got the lock while etcd was down")
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

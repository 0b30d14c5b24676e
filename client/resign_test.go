package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestLeaseAdoptsTokenSignedAgain: after a key rotation, the keepalive's
// answer carries the lease's token signed by the new key; the Lease
// adopts it, so its writes go on once the old key is retired (forced: the
// lease lives), while the token it was granted is refused as a retired
// key's.
func TestLeaseAdoptsTokenSignedAgain(t *testing.T) {
	_, etcd := testenv.PrivateEtcd(t) // retiring keys would refuse other tests' tokens
	auth := authority.NewEtcd(etcd, testenv.KEK())
	srv, stop, err := startGatewayOn(testenv.NewDatabase(t), auth, demoPolicy(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	clk := newFakeClock()
	c := client.New(srv.URL, client.WithClock(clk))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "account/acct-9", client.AcquireOptions{TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	granted := l.Token()
	clk.waitTimers(t, 2) // the expiry and the first keepalive
	if _, err := auth.RotateKey(ctx, 0); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second) // TTL/3: the keepalive
	if !testenv.WaitFor(10*time.Second, func() bool { return l.Token() != granted }) {
		t.Fatal("the lease kept the token granted after a keepalive under the new key")
	}
	if client.Unsigned(l.Token()) != client.Unsigned(granted) {
		t.Fatalf("token %s after the keepalive, want %s signed again", client.Unsigned(l.Token()), client.Unsigned(granted))
	}
	if _, err := auth.RetireKeys(ctx, authority.RetireOptions{Keep: 1, Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write(ctx, "debit", debit("acct-9", 1)); err != nil {
		t.Fatalf("the lease's write after the old key was retired: %v", err)
	}
	_, err = c.Write(ctx, granted, "debit", debit("acct-9", 1))
	if !errors.Is(err, client.ErrTokenRetired) || !errors.Is(err, client.ErrTokenRejected) {
		t.Fatalf("a write with the token granted: %v, want ErrTokenRetired (and ErrTokenRejected)", err)
	}
}

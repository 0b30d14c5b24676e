package client_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestLeaseLost revokes the lease behind the client's back: the next
// keepalive gets 404, Done fires with ErrLeaseLost, and nothing more is
// sent for the lease.
func TestLeaseLost(t *testing.T) {
	base := newGateway(t, demoPolicy(t))
	etcd := testenv.EtcdClient(t)
	revokers := []struct {
		name    string
		account string
		revoke  func(t *testing.T, id string)
	}{
		{"DELETE over HTTP", "acct-3", func(t *testing.T, id string) {
			req, _ := http.NewRequest(http.MethodDelete, base+"/v1/leases/"+id, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("DELETE: %s", resp.Status)
			}
		}},
		{"etcd revoke", "acct-4", func(t *testing.T, id string) {
			n, err := strconv.ParseInt(id, 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := etcd.Revoke(context.Background(), clientv3.LeaseID(n)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range revokers {
		t.Run(tt.name, func(t *testing.T) {
			proxy := newFaultProxy(t, base)
			clk := newFakeClock()
			c := client.New(proxy.URL, client.WithClock(clk))
			ctx := context.Background()
			l, err := c.Acquire(ctx, "account/"+tt.account, client.AcquireOptions{TTL: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			clk.waitTimers(t, 2) // the expiry and the first keepalive
			tt.revoke(t, l.ID())
			if l.Err() != nil {
				t.Fatalf("lease ended before any keepalive: %v", l.Err())
			}

			clk.Advance(time.Second) // TTL/3: the keepalive gets 404
			waitDone(t, l)
			var p *client.ProblemError
			if !errors.Is(l.Err(), client.ErrLeaseLost) || !errors.As(l.Err(), &p) || p.Kind() != "lease-not-found" {
				t.Fatalf("Err = %v, want ErrLeaseLost from a lease-not-found problem", l.Err())
			}
			if n := proxy.count("keepalive"); n != 1 {
				t.Errorf("%d keepalives, want 1", n)
			}
			checkNoKeepalive(t)

			if _, err := l.Write(ctx, "debit", debit(tt.account, 1)); !errors.Is(err, client.ErrLeaseLost) {
				t.Errorf("Write after loss: %v, want ErrLeaseLost", err)
			}
			if err := l.Release(ctx); err != nil {
				t.Errorf("Release after loss: %v, want nil", err)
			}
			if w, r := proxy.count("write"), proxy.count("release"); w+r != 0 {
				t.Errorf("after loss the lease sent %d writes and %d releases, want none", w, r)
			}
			if !errors.Is(l.Err(), client.ErrLeaseLost) {
				t.Errorf("Err after Release = %v, want ErrLeaseLost still", l.Err())
			}
		})
	}
}

// TestLeaseExpiresWhileGatewayUnreachable keeps answering keepalives with a
// fault: they are retried until the local deadline, then Done fires with
// ErrLeaseExpired, and writes are refused without a request.
func TestLeaseExpiresWhileGatewayUnreachable(t *testing.T) {
	base := newGateway(t, demoPolicy(t))
	for i, fault := range []string{"503", "drop"} {
		t.Run(fault, func(t *testing.T) {
			account := "acct-" + strconv.Itoa(5+i)
			proxy := newFaultProxy(t, base)
			clk := newFakeClock()
			start := clk.Now()
			var mu sync.Mutex
			var failures []client.RenewFailure
			c := client.New(proxy.URL, client.WithClock(clk), client.WithRenewFailures(func(f client.RenewFailure) {
				mu.Lock()
				defer mu.Unlock()
				failures = append(failures, f)
			}))
			ctx := context.Background()
			l, err := c.Acquire(ctx, "account/"+account, client.AcquireOptions{TTL: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if want := start.Add(3*time.Second - 300*time.Millisecond); !l.Deadline().Equal(want) {
				t.Fatalf("deadline %s, want acquire sent + 3s - 300ms", l.Deadline().Sub(start))
			}
			clk.waitTimers(t, 2)
			proxy.setFault(fault)

			// Keepalives fail from 1 s on and are retried with backoff;
			// the lease lasts until its deadline at 2.7 s.
			for clk.Now().Before(start.Add(2600 * time.Millisecond)) {
				clk.Advance(100 * time.Millisecond)
				clk.waitTimers(t, 2)
				if err := l.Err(); err != nil {
					t.Fatalf("lease ended at %s, before its deadline: %v", clk.Now().Sub(start), err)
				}
			}
			if n := proxy.count("keepalive"); n < 4 {
				t.Errorf("%d keepalives before the deadline, want retries (at least 4)", n)
			}
			clk.Advance(100 * time.Millisecond)
			select {
			case <-l.Done():
			default:
				t.Fatal("Done not closed at the deadline")
			}
			if !errors.Is(l.Err(), client.ErrLeaseExpired) {
				t.Fatalf("Err = %v, want ErrLeaseExpired", l.Err())
			}
			checkNoKeepalive(t)
			// Each failed keepalive was reported, as the danger it is:
			// with the time left, less each time.
			mu.Lock()
			defer mu.Unlock()
			if n := proxy.count("keepalive"); len(failures) != n {
				t.Errorf("%d renew failures reported, %d keepalives failed", len(failures), n)
			}
			for i, f := range failures {
				if f.Resource != "account/"+account || f.LeaseID != l.ID() || f.Err == nil || f.Left <= 0 ||
					i > 0 && f.Left >= failures[i-1].Left {
					t.Errorf("renew failure %d: %+v, want the lease's, an error and less time left than the one before", i, f)
				}
			}

			writes := proxy.count("write")
			if _, err := l.Write(ctx, "debit", debit(account, 1)); !errors.Is(err, client.ErrLeaseExpired) {
				t.Errorf("Write after expiry: %v, want ErrLeaseExpired", err)
			}
			if got := proxy.count("write"); got != writes {
				t.Errorf("Write after expiry sent %d requests", got-writes)
			}

			// The gateway may still hold the lease: Release still frees it.
			proxy.setFault("")
			if err := l.Release(ctx); err != nil {
				t.Errorf("Release after expiry: %v", err)
			}
			if n := proxy.count("release"); n != 1 {
				t.Errorf("%d DELETE requests, want 1", n)
			}
			if !errors.Is(l.Err(), client.ErrLeaseExpired) {
				t.Errorf("Err after Release = %v, want ErrLeaseExpired still", l.Err())
			}
		})
	}
}

// TestKeepaliveExtendsLease runs on the real clock: a lease outlives its
// TTL because keepalives move its deadline, and they come no more often
// than every TTL/3. It waits for the keepalives, not for a window of time:
// a slow machine only spaces them further apart.
func TestKeepaliveExtendsLease(t *testing.T) {
	proxy := newFaultProxy(t, newGateway(t, demoPolicy(t)))
	c := client.New(proxy.URL)
	ctx := context.Background()
	const ttl = 3 * time.Second
	start := time.Now()
	l, err := c.Acquire(ctx, "account/acct-7", client.AcquireOptions{TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	first := l.Deadline()
	if !testenv.WaitFor(4*ttl, func() bool { return proxy.count("keepalive") >= 4 }) {
		t.Fatalf("%d keepalives, want 4: the lease would have expired", proxy.count("keepalive"))
	}
	if err := l.Err(); err != nil {
		t.Fatalf("lease ended: %v", err)
	}
	// The deadline counts from the last keepalive answered, three (or,
	// with the fourth in flight, two) spacings of TTL/3 after the grant.
	if moved := l.Deadline().Sub(first); moved < 2*ttl/3 {
		t.Errorf("deadline moved %s after 4 keepalives, want at least %s", moved, 2*ttl/3)
	}
	if n, most := proxy.count("keepalive"), int(time.Since(start)/(ttl/3))+1; n > most {
		t.Errorf("%d keepalives in %s: more than one every TTL/3", n, time.Since(start))
	}
	if _, err := l.Write(ctx, "credit", debit("acct-7", 1)); err != nil {
		t.Errorf("Write: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	checkNoKeepalive(t)
}

// TestAcquireAfterWaitRenews: when the wait for the lock used up a third
// of the TTL counted from the request — or all of it — Acquire renews at
// once, before arming the deadline, so the deadline counts from the
// keepalive and the freshly granted lock is not thrown away.
func TestAcquireAfterWaitRenews(t *testing.T) {
	for _, tt := range []struct {
		wait    time.Duration
		account string
	}{
		{2 * time.Second, "account/acct-8"},
		{5 * time.Second, "account/acct-9"}, // past the 2.7 s deadline counted from the request
	} {
		t.Run(tt.wait.String(), func(t *testing.T) {
			base := newGateway(t, demoPolicy(t))
			ctx := context.Background()
			holder, err := client.New(base).Acquire(ctx, tt.account, client.AcquireOptions{TTL: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			proxy := newFaultProxy(t, base)
			clk := newFakeClock()
			start := clk.Now()
			type acquired struct {
				l   *client.Lease
				err error
			}
			got := make(chan acquired, 1)
			go func() {
				l, err := client.New(proxy.URL, client.WithClock(clk)).Acquire(ctx, tt.account,
					client.AcquireOptions{TTL: 3 * time.Second, Wait: 10 * time.Second})
				got <- acquired{l, err}
			}()
			if !testenv.WaitFor(10*time.Second, func() bool { return proxy.count("acquire") == 1 }) {
				t.Fatal("the waiting Acquire never reached the gateway")
			}
			clk.Advance(tt.wait)
			if err := holder.Release(ctx); err != nil {
				t.Fatal(err)
			}
			a := <-got
			if a.err != nil {
				t.Fatal(a.err)
			}
			if n := proxy.count("keepalive"); n != 1 {
				t.Errorf("%d keepalives during Acquire, want 1", n)
			}
			if want := start.Add(tt.wait + 3*time.Second - 300*time.Millisecond); !a.l.Deadline().Equal(want) {
				t.Errorf("deadline %s after the request, want %s (renewed at %s)", a.l.Deadline().Sub(start), want.Sub(start), tt.wait)
			}
			if err := a.l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			checkNoKeepalive(t)
		})
	}
}

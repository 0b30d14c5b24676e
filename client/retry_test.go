package client_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestWriteRetriedUnderItsKey: a write whose answer is lost after the
// gateway applied it, or that a load balancer answers 503, is sent again
// under its Idempotency-Key: applied once, the retry answered with the
// first execution's answer. A final refusal is not sent again.
func TestWriteRetriedUnderItsKey(t *testing.T) {
	proxy := newFaultProxy(t, newGateway(t, demoPolicy(t)))
	c := client.New(proxy.URL)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "account/acct-31", client.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)

	proxy.setFault("lose-answer")
	res, err := l.Write(ctx, "debit", debit("acct-31", 7))
	if err != nil {
		t.Fatalf("a write whose answer was lost once: %v", err)
	}
	if !res.Replayed || balance(t, res) != 993 {
		t.Errorf("replayed %v, balance %d; want the first execution's answer, 993, replayed", res.Replayed, balance(t, res))
	}
	if n := proxy.count("write"); n != 2 {
		t.Errorf("%d writes sent, want the first and its retry", n)
	}

	proxy.setFault("503-once")
	res, err = l.Write(ctx, "debit", debit("acct-31", 3))
	if err != nil {
		t.Fatalf("a write answered 503 once: %v", err)
	}
	if res.Replayed || balance(t, res) != 990 {
		t.Errorf("replayed %v, balance %d; want 990, applied by the retry", res.Replayed, balance(t, res))
	}
	if n := proxy.count("write"); n != 4 {
		t.Errorf("%d writes sent in all, want 4", n)
	}

	_, err = c.Write(ctx, "1:999999999", "debit", debit("acct-31", 1))
	if !errors.Is(err, client.ErrTokenRejected) {
		t.Fatalf("a forged token: %v, want ErrTokenRejected", err)
	}
	if n := proxy.count("write"); n != 5 {
		t.Errorf("%d writes sent in all, want 5: a final refusal is not sent again", n)
	}
}

// TestWriteUnavailableEverywhere: a write every attempt of which is
// answered 503 gives up after a few, with ErrUnavailable, and never says
// "not applied" of a write one attempt of which may have been.
func TestWriteUnavailableEverywhere(t *testing.T) {
	proxy := newFaultProxy(t, newGateway(t, demoPolicy(t)))
	c := client.New(proxy.URL)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "account/acct-32", client.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	proxy.setFault("503")
	defer proxy.setFault("")
	_, err = l.Write(ctx, "debit", debit("acct-32", 1))
	if !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("every attempt answered 503: %v, want ErrUnavailable", err)
	}
	if n := proxy.count("write"); n < 2 || n > 4 {
		t.Errorf("%d attempts, want 2 to 4", n)
	}
}

// deadURL is the URL of a port nothing listens on: connections to it are
// refused.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestReplicasFailOver: a client of two replicas, the first down, takes
// its lease, writes and renews through the second, and asks the second
// first from then on; when that one goes down in turn (its proxy cut
// off) and the first is back, writes and renewals go on through it.
func TestReplicasFailOver(t *testing.T) {
	gw := newGateway(t, demoPolicy(t))
	a, b := newFaultProxy(t, gw), newFaultProxy(t, gw)
	a.setFault("drop")
	c := client.NewReplicas([]string{a.URL, b.URL})
	ctx := context.Background()
	l, err := c.Acquire(ctx, "account/acct-33", client.AcquireOptions{TTL: 3 * time.Second})
	if err != nil {
		t.Fatalf("acquire with the first replica down: %v", err)
	}
	defer l.Release(ctx)
	for range 3 {
		if _, err := l.Write(ctx, "debit", debit("acct-33", 1)); err != nil {
			t.Fatalf("a write with the first replica down: %v", err)
		}
	}
	if n := a.count("acquire") + a.count("write"); n != 1 {
		t.Errorf("the replica that is down was asked %d times, want once (then the other is preferred)", n)
	}
	if !testenv.WaitFor(10*time.Second, func() bool { return b.count("keepalive") >= 2 }) {
		t.Fatalf("%d keepalives through the second replica, want 2", b.count("keepalive"))
	}
	a.setFault("")
	b.setFault("drop")
	writes := a.count("write")
	if _, err := l.Write(ctx, "debit", debit("acct-33", 1)); err != nil {
		t.Fatalf("a write with the second replica down: %v", err)
	}
	if a.count("write") != writes+1 {
		t.Error("the write did not go through the first replica")
	}
	keepalives := a.count("keepalive")
	if !testenv.WaitFor(10*time.Second, func() bool { return a.count("keepalive") >= keepalives+2 }) {
		t.Fatal("no keepalives through the first replica once the second was down")
	}
	if err := l.Err(); err != nil {
		t.Fatalf("the lease ended: %v", err)
	}
}

// TestNoReplicas: a client of no replica, or of a malformed URL among
// good ones, fails every call before sending anything.
func TestNoReplicas(t *testing.T) {
	for _, urls := range [][]string{nil, {}, {"http://127.0.0.1:1", "localhost:8080"}} {
		_, err := client.NewReplicas(urls).Acquire(context.Background(), "account/acct-1", client.AcquireOptions{})
		if !errors.Is(err, client.ErrBadOptions) {
			t.Errorf("replicas %q: %v, want ErrBadOptions", urls, err)
		}
	}
}

// TestReplicasAllDown: every replica refusing connections, a write fails
// after a few attempts with the transport's error, not a problem.
func TestReplicasAllDown(t *testing.T) {
	c := client.NewReplicas([]string{deadURL(t), deadURL(t)})
	_, err := c.Write(context.Background(), "1:1", "debit", debit("acct-1", 1))
	var p *client.ProblemError
	var op *net.OpError
	if err == nil || errors.As(err, &p) || !errors.As(err, &op) {
		t.Fatalf("every replica down: %v, want the connection's error", err)
	}
}

// TestAcquireKeepsALeaseWhoseRenewalAfterTheWaitIsLost: the keepalive
// Acquire sends after a long wait is answered 503. The lease is kept,
// its deadline counted from the acquisition's request, and the keepalive
// goroutine renews it once the gateway answers again; it used to be
// released, the lock granted after the wait thrown away.
func TestAcquireKeepsALeaseWhoseRenewalAfterTheWaitIsLost(t *testing.T) {
	base := newGateway(t, demoPolicy(t))
	ctx := context.Background()
	holder, err := client.New(base).Acquire(ctx, "account/acct-34", client.AcquireOptions{TTL: 10 * time.Second})
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
		l, err := client.New(proxy.URL, client.WithClock(clk)).Acquire(ctx, "account/acct-34",
			client.AcquireOptions{TTL: 3 * time.Second, Wait: 10 * time.Second})
		got <- acquired{l, err}
	}()
	if !testenv.WaitFor(10*time.Second, func() bool { return proxy.count("acquire") == 1 }) {
		t.Fatal("the waiting Acquire never reached the gateway")
	}
	clk.Advance(2 * time.Second)
	proxy.setFault("503")
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-got
	proxy.setFault("")
	if a.err != nil {
		t.Fatalf("Acquire whose renewal after the wait was answered 503: %v", a.err)
	}
	defer a.l.Release(ctx)
	if n := proxy.count("keepalive"); n != 1 {
		t.Errorf("%d keepalives during Acquire, want 1", n)
	}
	first := start.Add(3*time.Second - 300*time.Millisecond)
	if !a.l.Deadline().Equal(first) {
		t.Errorf("deadline %s after the request, want %s: counted from the request", a.l.Deadline().Sub(start), first.Sub(start))
	}
	// The next keepalive is due at half the time left, 350 ms.
	clk.waitTimers(t, 2)
	clk.Advance(350 * time.Millisecond)
	if !testenv.WaitFor(10*time.Second, func() bool { return a.l.Deadline().After(first) }) {
		t.Fatalf("the deadline stayed at %s: no renewal", a.l.Deadline().Sub(start))
	}
	if err := a.l.Err(); err != nil {
		t.Fatalf("the lease ended: %v", err)
	}
}

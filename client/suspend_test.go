package client_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/clockskew"
)

// skewedClock is the real clock read as a process whose wall clock was
// stepped, or whose machine was suspended, reads it (package clockskew):
// step moves the wall reading, lag holds the monotonic reading back.
type skewedClock struct{ step, lag atomic.Int64 }

func (c *skewedClock) Now() time.Time {
	return clockskew.Reading(time.Now(), time.Duration(c.step.Load()), time.Duration(c.lag.Load()))
}

func (c *skewedClock) AfterFunc(d time.Duration, f func()) client.Timer { return time.AfterFunc(d, f) }

// TestLeaseEndsAfterASuspend: a machine suspended for longer than a
// lease's TTL resumes with its monotonic clock where it stopped and its
// wall clock past the deadline, while etcd ran the TTL out. The lease
// must end at once, by the wall clock: Err says expired and a write under
// it is not sent. On the monotonic clock alone it would look good for
// most of its TTL.
func TestLeaseEndsAfterASuspend(t *testing.T) {
	if err := clockskew.Check(); err != nil {
		t.Fatal(err)
	}
	proxy := newFaultProxy(t, newGateway(t, demoPolicy(t)))
	clk := &skewedClock{}
	ctx := context.Background()
	l, err := client.New(proxy.URL, client.WithClock(clk)).Acquire(ctx, "account/acct-3", client.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if err := l.Err(); err != nil {
		t.Fatalf("a fresh lease: %v", err)
	}
	// A 20 s suspend has just ended.
	clk.step.Store(int64(20 * time.Second))
	clk.lag.Store(int64(20 * time.Second))
	now := clk.Now()
	if !now.Before(l.Deadline()) || now.Round(0).Before(l.Deadline().Round(0)) {
		t.Fatal("the resumed clock does not read as a suspend: ahead of the deadline by the monotonic clock, past it by the wall clock")
	}
	if err := l.Err(); !errors.Is(err, client.ErrLeaseExpired) {
		t.Fatalf("after the suspend: Err = %v, want ErrLeaseExpired", err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done is not closed")
	}
	writes := proxy.count("write")
	if _, err := l.Write(ctx, "debit", map[string]any{"account": "acct-3", "amount_cents": 5}); !errors.Is(err, client.ErrLeaseExpired) {
		t.Fatalf("a write after the suspend: %v, want it refused unsent", err)
	}
	if proxy.count("write") != writes {
		t.Fatal("the write after the suspend reached the gateway")
	}
}

// TestLeaseEndsWhenTheWallClockStepsBack: a wall clock stepped back an
// hour does not extend a lease: it ends on its monotonic deadline, the
// expiry timer's, though the wall clock says it has an hour to go.
func TestLeaseEndsWhenTheWallClockStepsBack(t *testing.T) {
	if err := clockskew.Check(); err != nil {
		t.Fatal(err)
	}
	proxy := newFaultProxy(t, newGateway(t, demoPolicy(t)))
	clk := &skewedClock{}
	ctx := context.Background()
	l, err := client.New(proxy.URL, client.WithClock(clk)).Acquire(ctx, "account/acct-4", client.AcquireOptions{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	clk.step.Store(int64(-time.Hour))
	clk.lag.Store(int64(-time.Hour))
	proxy.setFault("503") // no keepalive succeeds: the deadline stays
	select {
	case <-l.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the lease outlived its deadline by far")
	}
	if err := l.Err(); !errors.Is(err, client.ErrLeaseExpired) {
		t.Fatalf("Err = %v, want ErrLeaseExpired", err)
	}
	if now := clk.Now(); !now.Round(0).Before(l.Deadline().Round(0)) {
		t.Fatal("the wall clock was not an hour behind the deadline: the test proved nothing")
	}
}

package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/examples/internal/psp"
	"github.com/fencegw/fencegw/examples/internal/storytest"
)

// TestDispatch: the queue's leader has the provider refund each intent
// once, under the intent's id as idempotency key, and records each
// refund with its token; a second dispatch finds nothing to do and does
// not call the provider.
func TestDispatch(t *testing.T) {
	gw := startGateway(t)
	fake, pspURL := storytest.Provider(t)
	intents := []string{"8842", "8843", "8844"}
	requestRefunds(t, gw.URL, "refunds", intents...)
	l := takeQueue(t, gw.URL, "refunds")
	p := psp.NewClient(pspURL, storytest.EventTimeout)

	rep, err := dispatch(t.Context(), l, p, true)
	if err != nil || rep != (dispatchReport{Delivered: 3}) {
		t.Fatalf("dispatch: %+v, %v; want 3 delivered", rep, err)
	}
	ds := deliveries(t, gw.Pool)
	checkOneChargeEach(t, fake, ds, intents...)
	for _, c := range fake.Charges() {
		if c.IdempotencyKey != c.Reference {
			t.Errorf("refund %s: idempotency key %q, want the intent's id %q", c.Ref, c.IdempotencyKey, c.Reference)
		}
	}
	for id, d := range ds {
		if d.Via != "dispatch" || d.Token != client.Unsigned(l.token) {
			t.Errorf("intent %s: recorded %+v; want via dispatch, by token %s", id, d, client.Unsigned(l.token))
		}
	}

	before := fake.Stats()
	if rep, err := dispatch(t.Context(), l, p, true); err != nil || rep != (dispatchReport{}) {
		t.Errorf("second dispatch: %+v, %v; want nothing to do", rep, err)
	}
	if after := fake.Stats(); after != before {
		t.Errorf("second dispatch: provider %+v, then %+v; want it not called", before, after)
	}
}

// TestStaleLeaderDoesNothing: a dispatcher or sweeper whose token a newer
// leader's write has superseded is refused at its first read: it does not
// call the provider, and nothing is written.
func TestStaleLeaderDoesNothing(t *testing.T) {
	gw := startGateway(t)
	fake, pspURL := storytest.Provider(t)
	p := psp.NewClient(pspURL, storytest.EventTimeout)
	requestRefunds(t, gw.URL, "refunds", "8842")

	// A's lease ends before B's begins; B delivers 8842, so the queue's
	// fence is at B's token when 8843 is requested.
	c := client.New(gw.URL)
	leaseA, err := c.Acquire(t.Context(), "outbox/refunds", client.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := leaseA.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	a := leader{c: c, token: leaseA.Token(), queue: "refunds", out: logWriter{t}}
	if _, err := dispatch(t.Context(), takeQueue(t, gw.URL, "refunds"), p, true); err != nil {
		t.Fatal(err)
	}
	requestRefunds(t, gw.URL, "refunds", "8843")
	for _, tc := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"Dispatch", func(ctx context.Context) error { _, err := dispatch(ctx, a, p, true); return err }},
		{"Sweep", func(ctx context.Context) error { _, err := sweep(ctx, a, p, 0); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, calls := snapshot(t, gw.Pool), fake.Stats()
			var stale *client.StaleTokenError
			if err := tc.run(t.Context()); !errors.Is(err, client.ErrStaleToken) || !errors.As(err, &stale) {
				t.Fatalf("A: %v; want refused as stale", err)
			}
			if stale.Resource != "outbox/refunds" || stale.Presented != client.Unsigned(a.token) {
				t.Errorf("refusal: %s presented %s; want outbox/refunds, %s", stale.Resource, stale.Presented, client.Unsigned(a.token))
			}
			if got := fake.Stats(); got != calls {
				t.Errorf("provider: %+v, then %+v; want it not called", calls, got)
			}
			if after := snapshot(t, gw.Pool); after != before {
				t.Errorf("the state changed:\n got %+v\nwant %+v", after, before)
			}
		})
	}
	if d := deliveries(t, gw.Pool)["8843"]; d.Status != "pending" {
		t.Errorf("8843: %+v, want pending", d)
	}
}

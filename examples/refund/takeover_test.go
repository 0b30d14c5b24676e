package main

import (
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/examples/internal/psp"
	"github.com/fencegw/fencegw/examples/internal/storytest"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestTakeover replays the chapter's failure chain, scaled down and driven
// by events. Worker A takes the lock (TTL 2 s), claims intent 8842 and asks
// the provider for the refund, whose answer is held back. A then pauses:
// nothing of it reaches the gateway, keepalives included. Its lease
// expires; worker B takes the lock with a newer token, claims (the intent
// is already pending), asks the provider under the same idempotency key
// (the same refund, no second charge) and records it. Then A wakes up, gets
// its answer and sends the record it prepared: refused as stale, with
// nothing of it written.
//
// And the two controls. Without the idempotency key, B's provider call is
// a second refund: 8842 is charged twice, though the fence still refuses
// A's record. Without the fence, A's record is refused all the same, by
// the record's own condition (pending -> done only, 409
// precondition-failed): in this story the state of the intent is a second
// guard, so the fence-off control cannot fail it.
func TestTakeover(t *testing.T) {
	tests := []struct {
		name             string
		noIdempotencyKey bool
		noFence          bool
	}{
		{"OneRefundOneRecord", false, false},
		{"WithoutIdempotencyKeyChargesTwice", true, false},
		{"WithoutTheFenceTheIntentsStateRefuses", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { goTakeover(t, tt.noIdempotencyKey, tt.noFence) })
	}
}

// goTakeover tells the story with two workers in this process, the fence
// or the idempotency key left out for the controls.
func goTakeover(t *testing.T, noIdempotencyKey, noFence bool) {
	gw := storytest.Gateway(t, "refund_schema_migrations", func(c *gateway.Config) { c.UnsafeNoFence = noFence })
	fake, pspURL := storytest.Provider(t)
	held := storytest.HoldFirst(t, fake) // A's refund request

	// fencegw's client renews A's lease in the background, so a slow
	// provider alone would not cost A its lock as it did the chapter's
	// fixed-TTL lock; a pause would (GC, SIGSTOP, a partition): it stops
	// the keepalives too. The freezer is that pause as the gateway sees
	// it, holding all of A's requests to it; A's provider call, held by
	// the provider above, is apart.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(transport.CloseIdleConnections)
	pause := &freezer{base: transport}
	clientA := client.New(gw.URL, client.WithHTTPClient(&http.Client{Transport: pause}))
	cfgA := testConfig(t, gw.URL, pspURL)
	cfgA.TTL = 2 * time.Second
	cfgA.NoIdempotencyKey = noIdempotencyKey
	cfgA.Log = func(format string, args ...any) { t.Logf("A: "+format, args...) }
	type result struct {
		rep report
		err error
	}
	doneA, exitedA := make(chan result, 1), make(chan struct{})
	go func() {
		defer close(exitedA)
		rep, err := refundOnce(t.Context(), cfgA, clientA, psp.NewClient(pspURL, storytest.EventTimeout))
		doneA <- result{rep, err}
	}()
	var wake sync.Once
	wakeA := func() { wake.Do(func() { pause.thaw(); held.Answer() }) }
	t.Cleanup(func() { wakeA(); storytest.Await(t, exitedA, "worker A to end") })

	storytest.Await(t, held.Arrived(), "A's refund request at the provider")
	pause.freeze()
	observer := client.New(gw.URL)
	expired := testenv.WaitFor(storytest.EventTimeout, func() bool {
		st, err := observer.Observe(t.Context(), "refund/8842")
		return err == nil && st.Holder == nil
	})
	if !expired {
		t.Fatal("A's lease did not expire")
	}

	cfgB := testConfig(t, gw.URL, pspURL)
	cfgB.Log = func(format string, args ...any) { t.Logf("B: "+format, args...) }
	cfgB.NoIdempotencyKey = noIdempotencyKey
	repB, err := refundOnce(t.Context(), cfgB, client.New(gw.URL), psp.NewClient(pspURL, storytest.EventTimeout))
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	if repB.Outcome != outcomeRefunded {
		t.Fatalf("B: %+v, want refunded", repB)
	}
	charges := 1
	if noIdempotencyKey {
		charges = 2 // the control's failure: money left twice
	}
	if got, want := fake.Stats(), (psp.Stats{Charges: charges, Posts: 2}); got != want {
		t.Errorf("provider after B: %+v, want %+v", got, want)
	}
	before := readState(t, gw.Pool)
	checkRecorded(t, before, repB.PSPRef, repB.Token)

	wakeA()
	a := storytest.Await(t, doneA, "worker A's record")
	var stale *client.StaleTokenError
	switch {
	case noFence:
		if !errors.Is(a.err, client.ErrPreconditionFailed) {
			t.Fatalf("A without the fence: %+v, %v; want its record refused by pending -> done", a.rep, a.err)
		}
	case !errors.Is(a.err, client.ErrStaleToken) || !errors.As(a.err, &stale):
		t.Fatalf("A: %+v, %v; want its record refused as stale", a.rep, a.err)
	case stale.Resource != "refund/8842" || stale.Presented != a.rep.Token || stale.Current != repB.Token:
		t.Errorf("refusal: %s presented %s, fence at %s; want refund/8842, %s, %s",
			stale.Resource, stale.Presented, stale.Current, a.rep.Token, repB.Token)
	}
	if oneRefund := a.rep.PSPRef == repB.PSPRef; oneRefund == noIdempotencyKey {
		t.Errorf("A got provider refund %q, B %q: want one refund unless the key is left out", a.rep.PSPRef, repB.PSPRef)
	}
	if got, want := fake.Stats(), (psp.Stats{Charges: charges, Posts: 2}); got != want {
		t.Errorf("provider after A: %+v, want %+v", got, want)
	}
	if after := readState(t, gw.Pool); after != before {
		t.Errorf("A's refused record changed the state:\n got %+v\nwant %+v", after, before)
	}
}

// freezer is a transport whose requests wait while it is frozen, until it
// thaws or their context ends: a paused process, seen from the gateway.
type freezer struct {
	base http.RoundTripper

	mu     sync.Mutex
	thawed chan struct{} // nil unless frozen
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.thawed == nil {
		f.thawed = make(chan struct{})
	}
}

func (f *freezer) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.thawed != nil {
		close(f.thawed)
		f.thawed = nil
	}
}

func (f *freezer) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	thawed := f.thawed
	f.mu.Unlock()
	if thawed != nil {
		select {
		case <-thawed:
		case <-req.Context().Done():
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, req.Context().Err()
		}
	}
	return f.base.RoundTrip(req)
}

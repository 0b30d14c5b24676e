//go:build linux

package main

import (
	"fmt"
	"slices"
	"testing"
)

// intents are the refunds each takeover delivers; A is paused on the first.
var intents = []string{"8842", "8843", "8844"}

// pausePoint is where in the flow the first dispatcher, A, is frozen.
type pausePoint struct {
	name string
	hold string // the hold point A is frozen at; "" for a provider's answer held back
}

var pausePoints = []pausePoint{
	{"AfterRead", "read"},         // A has read 8842's row; the provider has not heard of it
	{"BeforeProviderAnswers", ""}, // the provider has refunded 8842 for A, and holds its answer
	{"AfterCharge", "charged"},    // A has the provider's refund of 8842, not yet recorded
}

// TestTakeover replays the chapter's failure chain (§9.10.1) on the
// outbox, with real processes: dispatcher A, under `fencegw lock` with a
// 2-second lease, is frozen (SIGSTOP, its `fencegw lock` too) at each
// point of its flow in turn; its lease expires; dispatcher B takes the
// queue and delivers every message; A is resumed and carries on with
// what it had in hand. With the intent's id as the provider's idempotency
// key, the provider makes one refund per intent: A's late call, if it
// makes one, is the same refund as B's. The control runs the same story
// with no key: A and B both refund 8842. Both ways the fence refuses A's
// late record (stale-token; its `fencegw lock` exits 3) and the database
// holds one delivery per intent, B's: the fence protects the database,
// not the provider.
func TestTakeover(t *testing.T) {
	bin := build(t)
	for i, pp := range pausePoints {
		for _, control := range []bool{false, true} {
			name, queue := pp.name+"/OneChargeEach", fmt.Sprintf("refunds-%d-fenced", i)
			if control {
				name, queue = pp.name+"/WithoutIdempotencyKeyChargesTwice", fmt.Sprintf("refunds-%d-control", i)
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := takeover(t, bin, pp, queue, control)
				if control {
					checkDoubleCharge(t, s)
				} else {
					checkOneChargeEach(t, s.fake, s.deliveries, intents...)
				}
			})
		}
	}
}

// checkDoubleCharge fails the test unless the provider refunded 8842
// twice, A's and B's, and the others once: the control must fail where
// the fenced run passes, or it proves nothing.
func checkDoubleCharge(t *testing.T, s *story) {
	t.Helper()
	for _, id := range intents {
		want := 1
		if id == intents[0] {
			want = 2
		}
		if n := s.fake.ChargesFor(id); n != want {
			t.Errorf("without idempotency keys the provider refunded %s %d time(s), want %d", id, n, want)
		}
	}
	var refs []string
	for _, c := range s.fake.Charges() {
		if c.Reference == intents[0] {
			refs = append(refs, c.Ref)
		}
	}
	if d := s.deliveries[intents[0]]; len(refs) == 2 && !slices.Contains(refs, d.PSPRef) {
		t.Errorf("8842 recorded as %q, none of the provider's refunds %v", d.PSPRef, refs)
	}
	t.Logf("without idempotency keys: the provider refunded 8842 twice (%v); the database records one delivery, %s",
		refs, s.deliveries[intents[0]].PSPRef)
}

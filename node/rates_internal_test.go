package node

import (
	"slices"
	"testing"
	"time"
)

// TestRateHistory: each sample is what the counters gained in its
// interval; the first only sets where counting starts, and the ring keeps
// the newest rateSlots, oldest first.
func TestRateHistory(t *testing.T) {
	start := time.Date(2026, 10, 18, 12, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return start.Add(time.Duration(i) * RateEvery) }
	var h rateHistory
	h.record(at(0), 100, 7)
	if got := h.samples(); len(got) != 0 {
		t.Fatalf("after the first record: %d samples, want none (it only sets the baseline)", len(got))
	}
	h.record(at(1), 130, 9)
	h.record(at(2), 130, 9)
	h.record(at(3), 0, 0) // a reset registry: nothing counted, and counting resumes from 0
	h.record(at(4), 5, 1)
	want := []RateSample{
		{At: at(1), Writes: 30, Refusals: 2},
		{At: at(2)},
		{At: at(3)},
		{At: at(4), Writes: 5, Refusals: 1},
	}
	if got := h.samples(); !equalSamples(got, want) {
		t.Fatalf("samples = %+v, want %+v", got, want)
	}

	for i := 5; i < 5+2*rateSlots; i++ {
		h.record(at(i), float64(5+i), 1)
	}
	got := h.samples()
	if len(got) != rateSlots {
		t.Fatalf("after %d records: %d samples, want the ring's %d", 4+2*rateSlots, len(got), rateSlots)
	}
	if first, last := got[0].At, got[len(got)-1].At; !first.Equal(at(5+rateSlots)) || !last.Equal(at(4+2*rateSlots)) {
		t.Fatalf("ring spans %s to %s, want the newest %d intervals, oldest first", first, last, rateSlots)
	}
}

func equalSamples(a, b []RateSample) bool {
	return slices.EqualFunc(a, b, func(x, y RateSample) bool {
		return x.At.Equal(y.At) && x.Writes == y.Writes && x.Refusals == y.Refusals
	})
}

package gateway

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestRateHistory: each sample is what the counters gained in its
// interval; the first only sets where counting starts, and the ring keeps
// the newest rateSlots, oldest first.
func TestRateHistory(t *testing.T) {
	start := time.Date(2026, 10, 18, 12, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return start.Add(time.Duration(i) * rateEvery) }
	var h rateHistory
	h.record(at(0), 100, 7)
	if got := h.samples(); len(got) != 0 {
		t.Fatalf("after the first record: %d samples, want none (it only sets the baseline)", len(got))
	}
	h.record(at(1), 130, 9)
	h.record(at(2), 130, 9)
	h.record(at(3), 0, 0) // a reset registry: nothing counted, and counting resumes from 0
	h.record(at(4), 5, 1)
	want := []rateSample{
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

// TestCounterTotal: the chart counts every series of a counter vector,
// or, for refusals, the series of fence refusals only.
func TestCounterTotal(t *testing.T) {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c"}, []string{"reason"})
	if got := counterTotal(v, nil); got != 0 {
		t.Fatalf("empty vector: %g, want 0", got)
	}
	v.WithLabelValues("not-found").Add(3)
	v.WithLabelValues("unauthorized").Add(5)
	v.WithLabelValues("stale-token").Inc()
	v.WithLabelValues("token-rejected").Add(2)
	if got := counterTotal(v, nil); got != 11 {
		t.Fatalf("total = %g, want 11", got)
	}
	if got := counterTotal(v, isFenceRefusal); got != 3 {
		t.Fatalf("fence refusals = %g, want 3 (stale-token, token-rejected)", got)
	}
}

func equalSamples(a, b []rateSample) bool {
	return slices.EqualFunc(a, b, func(x, y rateSample) bool {
		return x.At.Equal(y.At) && x.Writes == y.Writes && x.Refusals == y.Refusals
	})
}

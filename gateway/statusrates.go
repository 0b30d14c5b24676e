package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The status page's chart: rateSlots intervals of rateEvery, five minutes.
const (
	rateEvery = 5 * time.Second
	rateSlots = 60
)

// rateSample is what one interval of the status page's chart counted.
type rateSample struct {
	At       time.Time `json:"at"`       // the interval's end
	Writes   float64   `json:"writes"`   // fencegw_writes_total's increase: write requests, whatever their outcome
	Refusals float64   `json:"refusals"` // fencegw_rejections_total's increase in fence refusals (fenceRefusals)
}

// rateHistory is a ring of the last rateSlots intervals' counts.
//
// It samples the Prometheus counters every rateEvery rather than being
// fed where they are incremented: the write path then pays nothing for
// the status page, and the chart can never disagree with a dashboard
// built on the same counters. The price is a resolution of rateEvery.
type rateHistory struct {
	mu     sync.Mutex
	ring   [rateSlots]rateSample
	next   int // where the next sample goes
	stored int // samples in the ring, up to rateSlots
	primed bool
	// The counters' totals at the previous sample.
	lastWrites, lastRefusals float64
}

// record closes the interval ending at at, given the counters' totals
// then. The first call only takes the totals to count from.
func (h *rateHistory) record(at time.Time, writes, refusals float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.primed {
		// Counters never go down; max guards a registry reset all the same.
		h.ring[h.next] = rateSample{At: at, Writes: max(writes-h.lastWrites, 0), Refusals: max(refusals-h.lastRefusals, 0)}
		h.next = (h.next + 1) % rateSlots
		h.stored = min(h.stored+1, rateSlots)
	}
	h.primed, h.lastWrites, h.lastRefusals = true, writes, refusals
}

// samples returns the stored intervals, oldest first.
func (h *rateHistory) samples() []rateSample {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]rateSample, 0, h.stored)
	for i := range h.stored {
		out = append(out, h.ring[(h.next-h.stored+i+rateSlots)%rateSlots])
	}
	return out
}

// RunStatusRates samples the write and fence refusal counters every few
// seconds for the status page's chart, until ctx ends; without it the
// chart stays empty.
func (g *Gateway) RunStatusRates(ctx context.Context) {
	g.sampleRates(time.Now())
	t := time.NewTicker(rateEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			g.sampleRates(now)
		}
	}
}

// sampleRates closes the chart's interval ending at at.
func (g *Gateway) sampleRates(at time.Time) {
	g.status.rates.record(at, counterTotal(g.metrics.writes, nil), counterTotal(g.metrics.rejections, isFenceRefusal))
}

// isFenceRefusal keeps fencegw_rejections_total's series of the refusals
// the chart shows: writes the fence refused, not requests refused for
// what they are (a 404, a 401, bad JSON), which would drown them.
func isFenceRefusal(m *dto.Metric) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == "reason" {
			return fenceRefusals[l.GetValue()]
		}
	}
	return false
}

// counterTotal is the sum of the series of a counter vector that keep
// accepts, or of all of them if keep is nil.
func counterTotal(c prometheus.Collector, keep func(*dto.Metric) bool) float64 {
	ch := make(chan prometheus.Metric, 16)
	go func() { c.Collect(ch); close(ch) }()
	var sum float64
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err == nil && pb.Counter != nil && (keep == nil || keep(&pb)) {
			sum += pb.Counter.GetValue()
		}
	}
	return sum
}

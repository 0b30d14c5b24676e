package node

import (
	"context"
	"sync"
	"time"
)

// The status page's chart: rateSlots intervals of RateEvery, five minutes.
const (
	RateEvery = 5 * time.Second
	rateSlots = 60
)

// RateSample is what one interval of the status page's chart counted.
type RateSample struct {
	At       time.Time `json:"at"`       // the interval's end
	Writes   float64   `json:"writes"`   // fencegw_writes_total's increase: write requests, whatever their outcome
	Refusals float64   `json:"refusals"` // fencegw_rejections_total's increase in fence refusals
}

// Counts are the totals the chart samples: the write requests the gateway
// answered and the fence refusals among its answers, as its counters have
// them (gateway.Gateway.WriteCounts).
type Counts func() (writes, refusals float64)

// rateHistory is a ring of the last rateSlots intervals' counts.
//
// It samples the Prometheus counters every RateEvery rather than being
// fed where they are incremented: the write path then pays nothing for
// the status page, and the chart can never disagree with a dashboard
// built on the same counters. The price is a resolution of RateEvery.
type rateHistory struct {
	mu     sync.Mutex
	ring   [rateSlots]RateSample
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
		h.ring[h.next] = RateSample{At: at, Writes: max(writes-h.lastWrites, 0), Refusals: max(refusals-h.lastRefusals, 0)}
		h.next = (h.next + 1) % rateSlots
		h.stored = min(h.stored+1, rateSlots)
	}
	h.primed, h.lastWrites, h.lastRefusals = true, writes, refusals
}

// samples returns the stored intervals, oldest first.
func (h *rateHistory) samples() []RateSample {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]RateSample, 0, h.stored)
	for i := range h.stored {
		out = append(out, h.ring[(h.next-h.stored+i+rateSlots)%rateSlots])
	}
	return out
}

// Rates are the status page's chart: the intervals of RateEvery sampled
// so far, up to five minutes of them, oldest first.
func (n *Node) Rates() []RateSample { return n.rates.samples() }

// RunStatusRates samples counts every RateEvery for the status page's
// chart, until ctx ends; without it the chart stays empty.
func (n *Node) RunStatusRates(ctx context.Context, counts Counts) {
	n.SampleRates(time.Now(), counts)
	t := time.NewTicker(RateEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			n.SampleRates(now, counts)
		}
	}
}

// SampleRates closes the chart's interval ending at at with counts'
// totals now, as RunStatusRates does every RateEvery.
func (n *Node) SampleRates(at time.Time, counts Counts) {
	writes, refusals := counts()
	n.rates.record(at, writes, refusals)
}

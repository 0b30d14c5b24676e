package gateway

import (
	"cmp"

	"github.com/prometheus/client_golang/prometheus"
)

// watchMetrics count the watch streams and the locks' transitions.
type watchMetrics struct {
	watches     prometheus.Gauge
	watchCutOff prometheus.Counter
}

// setUpWatches bounds the watch streams (in all and per client, as lease
// calls are, but apart from them: a stream holds its place for as long as
// it is followed) and registers their metrics.
func (g *Gateway) setUpWatches() {
	n := cmp.Or(g.cfg.MaxWatches, DefaultMaxWatches)
	perClient := n
	if g.cfg.Policy.AuthRequired() {
		perClient = max(1, n/4)
	}
	g.watchCalls = newCallLimit(n, perClient)
	g.watchCalls.what = "watch streams"
	m := watchMetrics{
		watches: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fencegw_lease_watches",
			Help: "Watch streams (GET /v1/leases/watch) this replica serves now.",
		}),
		watchCutOff: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fencegw_lease_watches_cut_off_total",
			Help: "Watch streams ended because their client fell a whole queue of events behind (it resumes with Last-Event-ID).",
		}),
	}
	g.metrics.watchMetrics = m
	g.metrics.registry.MustRegister(m.watches, m.watchCutOff,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "fencegw_lock_transitions_total",
			Help: "Locks granted to a new holder by this replica (Kubernetes' leaseTransitions; a retry that joins its first attempt's lease is none). Each lock's own count is in GET /v1/leases, its watch events and fencegw inspect.",
		}, func() float64 { return float64(g.cfg.Authority.Transitions()) }))
}

package sqlfront

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegw/fencegw/internal/admission"
)

// Metrics are the front's gate's, as the HTTP path's writes have theirs
// (fencegw_writes_in_flight, fencegw_writes_waiting,
// fencegw_admission_wait_seconds): how many sessions hold a turn, how
// many wait, how long they waited and how many waited in vain. The host
// serves them beside the gateway's (Collectors) and gives them to the
// front it starts (Config.Metrics).
type Metrics struct {
	gate    atomic.Pointer[admission.Gate] // the front's, once New made it
	waiting prometheus.Gauge
	waited  prometheus.Histogram
	refused prometheus.Counter
}

// NewMetrics returns the front's metrics, at zero.
func NewMetrics() *Metrics {
	return &Metrics{
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fencegw_sql_transactions_waiting",
			Help: "Sessions of the SQL front waiting at its admission gate for a turn (see --pg-max-transactions).",
		}),
		waited: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "fencegw_sql_admission_wait_seconds",
			Help:    "How long statements of the SQL front that found its admission gate full waited for a turn (admitted or not).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fencegw_sql_admission_refused_total",
			Help: "Statements of the SQL front refused (53000) after waiting --pg-queue-timeout for a turn, nothing of them sent to PostgreSQL.",
		}),
	}
}

// Collectors are the metrics to register; none of nil Metrics.
func (m *Metrics) Collectors() []prometheus.Collector {
	if m == nil {
		return nil
	}
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fencegw_sql_transactions_in_flight",
		Help: "Sessions of the SQL front past its admission gate: a transaction open, or a statement outside one (see --pg-max-transactions).",
	}, func() float64 {
		if g := m.gate.Load(); g != nil {
			return float64(g.InFlight())
		}
		return 0
	})
	return []prometheus.Collector{inFlight, m.waiting, m.waited, m.refused}
}

// gateConfig is cfg with m's reports, if m is set.
func (m *Metrics) gateConfig(cfg admission.Config) admission.Config {
	if m != nil {
		cfg.Waiting, cfg.Waited = m.waiting, m.waited
	}
	return cfg
}

// served notes g as the gate m reports on.
func (m *Metrics) served(g *admission.Gate) {
	if m != nil {
		m.gate.Store(g)
	}
}

// noTurn counts a statement refused for want of a turn.
func (m *Metrics) noTurn() {
	if m != nil {
		m.refused.Inc()
	}
}

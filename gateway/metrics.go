package gateway

import (
	"github.com/fencegw/fencegw/internal/buildinfo"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are registered on a registry of the gateway's own, so several
// gateways can live in one process (tests, dev mode).
type metrics struct {
	watchMetrics // watchmetrics.go
	registry     *prometheus.Registry
	writes       *prometheus.CounterVec
	reads        *prometheus.CounterVec
	readLatency  prometheus.Histogram
	rejections   *prometheus.CounterVec // the fence's and the authority's refusals only (fenceRefusals)
	problems     *prometheus.CounterVec // every other problem answered, but 404 and 405
	unrouted     *prometheus.CounterVec // 404 and 405
	clientGone   prometheus.Counter     // requests whose client hung up before the answer
	latency      *prometheus.HistogramVec
	leases       *prometheus.CounterVec
	// transactionRequests and its deprecated name, observed together.
	transactionRequests, deprecatedBatchSize prometheus.Histogram
	waiting                                  prometheus.Gauge
	waited                                   prometheus.Histogram
	leaseWait                                prometheus.Histogram
	ops                                      map[string]opMetrics // per policy operation, resolved once

	// Client connections on the API listener, when LimitConnections
	// bounds it (connlimit.go).
	connsOpen, connsMax prometheus.Gauge
	connsRefused        prometheus.Counter
}

// opMetrics are the children of the vectors an accepted write touches,
// looked up once instead of on every request.
type opMetrics struct {
	ok      prometheus.Counter
	latency prometheus.Observer
}

// forOperations resolves the per-operation series of names.
func (m *metrics) forOperations(names []string) {
	m.ops = make(map[string]opMetrics, len(names))
	for _, n := range names {
		m.ops[n] = opMetrics{ok: m.writes.WithLabelValues(n, "ok"), latency: m.latency.WithLabelValues(n)}
	}
}

// newMetrics makes the gateway's metrics; revision and epoch read the
// authority, reaped the node's count of the leases its reaper revoked.
func newMetrics(revision, epoch, reaped func() float64) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegw_writes_total",
			Help: "Fenced write requests by operation and outcome (ok or the problem type).",
		}, []string{"operation", "outcome"}),
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegw_reads_total",
			Help: "Fenced reads (POST /v1/reads) by operation and outcome (ok or the problem type); unknown operations under (unknown).",
		}, []string{"operation", "outcome"}),
		readLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "fencegw_read_duration_seconds",
			Help:    "Time to handle a fenced read, answered or refused.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegw_rejections_total",
			Help: "Writes the fence or the authority refused, by problem type: stale-token, token-rejected, token-retired.",
		}, []string{"reason"}),
		problems: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegw_problems_total",
			Help: "Problems answered other than the fence's refusals, 404s and 405s, by problem type: requests refused for what they are, limits, outages.",
		}, []string{"kind"}),
		unrouted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegw_unrouted_total",
			Help: "Requests for no endpoint (not-found) or with a method the endpoint does not take (method-not-allowed).",
		}, []string{"kind"}),
		clientGone: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fencegw_client_gone_total",
			Help: "Requests whose client hung up before they were answered (a lease wait given up, a call abandoned).",
		}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fencegw_write_duration_seconds",
			Help:    "Time to handle a fenced write request, accepted or not.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"operation"}),
		leases: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fencegw_leases_total", Help: leasesHelp}, []string{"event"}),
	}
	requestsHelp := "Requests (a write of POST /v1/ops or a batch of POST /v1/batch each) per transaction of coalescing resources: one alone, a hot resource's queued requests, or several resources' (group commit)."
	m.transactionRequests = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "fencegw_transaction_requests", Help: requestsHelp, Buckets: []float64{1, 2, 4, 8, 16, 32, 64},
	})
	// The former name, whose "batch" meant three things: kept, with the
	// same observations, until 0.3.0 (CHANGELOG.md).
	m.deprecatedBatchSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "fencegw_coalesced_batch_size", Help: "Deprecated: fencegw_transaction_requests, under its former name until 0.3.0. " + requestsHelp,
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64},
	})
	m.waiting = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "fencegw_writes_waiting",
		Help: "Writes waiting at the admission gate for a turn (see MaxInFlight).",
	})
	m.waited = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "fencegw_admission_wait_seconds",
		Help:    "How long writes that found the admission gate full waited for a turn (admitted or not); fencegw_write_duration_seconds starts after it.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
	})
	m.leaseWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "fencegw_lease_wait_seconds",
		Help:    "Time from a lease request to its grant, for granted leases: queueing behind holders, lock-delay, etcd.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 11), // up to 1,048 s: past the longest wait allowed
	})
	m.connsOpen = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "fencegw_client_connections_open",
		Help: "Client connections open on the API listener, idle keep-alive ones included (see fencegw_client_connections_max).",
	})
	m.connsMax = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "fencegw_client_connections_max",
		Help: "The API listener's limit of client connections open at once (--max-connections); 0 when not limited.",
	})
	m.connsRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fencegw_client_connections_refused_total",
		Help: "Client connections refused at --max-connections: answered 503 and closed (plain HTTP), or closed before the handshake (TLS).",
	})
	m.registry.MustRegister(m.writes, m.reads, m.readLatency, m.rejections, m.problems, m.unrouted, m.clientGone, m.latency, leaseEvents{m.leases, reaped}, m.transactionRequests, m.deprecatedBatchSize, m.waiting, m.waited, m.leaseWait,
		m.connsOpen, m.connsMax, m.connsRefused,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fencegw_etcd_revision",
			Help: "The newest etcd revision this gateway has seen.",
		}, revision),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fencegw_epoch",
			Help: "The token epoch this gateway accepts.",
		}, epoch),
		buildInfoGauge(),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	// The series a dashboard or an alert watches exist from the start, at
	// 0: a rate over a series that appears only with its first event reads
	// "no data" until then, and an alert on it cannot tell quiet from
	// broken.
	for _, event := range []string{"granted", "locked", "renewed", "renew_failed", "released"} {
		m.leases.WithLabelValues(event)
	}
	for reason := range fenceRefusals {
		m.rejections.WithLabelValues(reason)
	}
	return m
}

// leasesHelp is fencegw_leases_total's.
const leasesHelp = "Lease calls by event: granted, locked, renewed, renew_failed, released; and reaped: leases this replica revoked, not renewed for their TTL and a second or held past max_hold."

// leasesDesc describes fencegw_leases_total as its vector does.
var leasesDesc = prometheus.NewDesc("fencegw_leases_total", leasesHelp, []string{"event"}, nil)

// leaseEvents is fencegw_leases_total: the lease calls the gateway
// counts, and the leases the node's reaper revoked (Node.Reaped) as the
// event reaped, once there is one, as a series the vector made on its
// first increment would be. The reaper runs in the node, which counts
// its own: one metric, two counters.
type leaseEvents struct {
	*prometheus.CounterVec
	reaped func() float64
}

func (l leaseEvents) Collect(ch chan<- prometheus.Metric) {
	l.CounterVec.Collect(ch)
	if n := l.reaped(); n > 0 {
		ch <- prometheus.MustNewConstMetric(leasesDesc, prometheus.CounterValue, n, "reaped")
	}
}

// countProblem counts a problem answered, of kind, in the one metric it
// belongs to; gone says its client hung up first. A refusal of the fence
// is one whoever is left to hear it.
func (m *metrics) countProblem(kind string, gone bool) {
	switch {
	case fenceRefusals[kind]:
		m.rejections.WithLabelValues(kind).Inc()
	case gone:
		m.clientGone.Inc()
	case kind == "not-found", kind == "method-not-allowed":
		m.unrouted.WithLabelValues(kind).Inc()
	default:
		m.problems.WithLabelValues(kind).Inc()
	}
}

// buildInfoGauge is fencegw_build_info: 1, labelled with what the binary is,
// so dashboards can tell replicas running different builds apart.
func buildInfoGauge() prometheus.Collector {
	bi := buildinfo.Read()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "fencegw_build_info",
		Help:        "Always 1; the labels say which fencegw build this is.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "revision": bi.Revision, "goversion": bi.GoVersion},
	})
	g.Set(1)
	return g
}

// observeTransaction counts the requests of one transaction of coalescing
// resources, under fencegw_transaction_requests and its former name.
func (m *metrics) observeTransaction(requests int) {
	m.transactionRequests.Observe(float64(requests))
	m.deprecatedBatchSize.Observe(float64(requests))
}

package gateway

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// WriteCounts are the write requests this gateway has answered, whatever
// their outcome (fencegw_writes_total), and the fence's refusals among its
// answers (fencegw_rejections_total): what the status page's chart
// samples (node.Node.RunStatusRates), read from the counters a dashboard
// reads, so that the two never disagree.
func (g *Gateway) WriteCounts() (writes, refusals float64) {
	return counterTotal(g.metrics.writes, nil), counterTotal(g.metrics.rejections, isFenceRefusal)
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

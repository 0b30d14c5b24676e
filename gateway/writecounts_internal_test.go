package gateway

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

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

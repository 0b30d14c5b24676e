package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestReapedIsALeaseEvent: the leases the node's reaper revoked are
// fencegw_leases_total{event="reaped"} on /metrics, a series of the
// gateway's count of lease calls (the torture reads it so), absent until
// the first one.
func TestReapedIsALeaseEvent(t *testing.T) {
	var reaped float64
	m := newMetrics(func() float64 { return 0 }, func() float64 { return 1 }, func() float64 { return reaped })
	m.leases.WithLabelValues("granted").Add(2)
	for _, tc := range []struct {
		reaped float64
		want   []string
	}{
		{0, []string{`fencegw_leases_total{event="granted"} 2`}},
		{3, []string{`fencegw_leases_total{event="granted"} 2`, `fencegw_leases_total{event="reaped"} 3`}},
	} {
		reaped = tc.reaped
		w := httptest.NewRecorder()
		promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).
			ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		got := w.Body.String()
		if w.Code != http.StatusOK {
			t.Fatalf("reaped %g: /metrics %d %s", tc.reaped, w.Code, got)
		}
		for _, series := range tc.want {
			if !strings.Contains(got, series+"\n") {
				t.Errorf("reaped %g: /metrics lacks %s", tc.reaped, series)
			}
		}
		if n := strings.Count(got, `event="reaped"`); n != len(tc.want)-1 {
			t.Errorf("reaped %g: %d reaped series, want %d", tc.reaped, n, len(tc.want)-1)
		}
	}
}

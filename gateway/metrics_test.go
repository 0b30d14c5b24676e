package gateway_test

import (
	"strings"
	"testing"
)

// TestWatchedSeriesStartAtZero: the series the dashboard's panels and the
// alert rules watch are exported at 0 before their first event.
func TestWatchedSeriesStartAtZero(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	m := metricsText(t, h.base)
	for _, series := range []string{`fencegw_leases_total{event="renew_failed"} 0`, `fencegw_leases_total{event="locked"} 0`,
		`fencegw_rejections_total{reason="stale-token"} 0`, `fencegw_rejections_total{reason="token-rejected"} 0`} {
		if !strings.Contains(m, series+"\n") {
			t.Errorf("a new gateway's metrics lack %s", series)
		}
	}
}

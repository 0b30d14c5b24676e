package torture

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestReaped: the count of leases a gateway's reaper revoked is read from
// its metrics; a gateway that reaped none has no such series yet (0), and
// one that does not answer says -1, which the nemesis does not take for
// a count.
func TestReaped(t *testing.T) {
	var metrics atomic.Pointer[string]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, *metrics.Load()) }))
	defer srv.Close()
	for _, tt := range []struct {
		metrics string
		want    int
	}{
		{"# HELP fencegw_leases_total …\nfencegw_leases_total{event=\"granted\"} 12\n", 0},
		{"fencegw_leases_total{event=\"granted\"} 12\nfencegw_leases_total{event=\"reaped\"} 3\n", 3},
	} {
		metrics.Store(&tt.metrics)
		if got := reaped(srv.URL); got != tt.want {
			t.Errorf("%q: reaped %d, want %d", tt.metrics, got, tt.want)
		}
	}
	srv.Close()
	if got := reaped(srv.URL); got != -1 {
		t.Errorf("a gateway that does not answer: %d, want -1", got)
	}
}

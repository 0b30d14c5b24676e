package gateway

import (
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/fencegw/fencegw/fence"
)

// TestHistoryQueueNeverBlocks: with nobody draining the queue (PostgreSQL
// stuck), adding events returns at once; what does not fit is counted as
// dropped.
func TestHistoryQueueNeverBlocks(t *testing.T) {
	h := newHistorian(nil, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	const extra = 10
	for range historyQueue + extra {
		h.add(fence.HistoryEvent{Resource: "account/acct-1", Event: fence.Granted})
	}
	if got := counterValue(t, h.dropped); got != extra {
		t.Errorf("dropped %v, want %d", got, extra)
	}
	if got := counterValue(t, h.recorded.WithLabelValues(fence.Granted)); got != historyQueue {
		t.Errorf("queued %v, want %d", got, historyQueue)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

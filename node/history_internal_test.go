package node

import (
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/policy"
)

// TestHistoryQueueNeverBlocks: with nobody draining the queue (PostgreSQL
// stuck), adding events returns at once; what does not fit is counted as
// dropped.
func TestHistoryQueueNeverBlocks(t *testing.T) {
	h := newHistorian(nil, &policy.Policy{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
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

// TestHistoryWatchWaitsForRoom: the watch of lease ends is off every
// request's path, and a watch resumed at the cursor replays every end
// since, however many: with the queue full, an end waits for room instead
// of being dropped, where a mark after it would move the cursor past it
// (while the replica moves the cursor).
func TestHistoryWatchWaitsForRoom(t *testing.T) {
	h := newHistorian(nil, &policy.Policy{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for range historyQueue {
		h.add(fence.HistoryEvent{Resource: "account/acct-1", Event: fence.Granted})
	}
	// Not moving the cursor, no mark passes an end dropped: it drops.
	h.ended(t.Context(), authority.LeaseEnd{ID: 2, Resource: "account/acct-1", How: authority.EndExpired})
	if got := counterValue(t, h.dropped); got != 1 {
		t.Fatalf("dropped %v while the cursor does not move, want 1", got)
	}
	h.moving.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ended(t.Context(), authority.LeaseEnd{ID: 1, Resource: "account/acct-1", How: authority.EndExpired})
		h.reported(t.Context(), 7)
	}()
	<-h.queue // room for one; the end takes it
	<-h.queue // and for the mark
	<-done
	if got := counterValue(t, h.dropped); got != 1 {
		t.Errorf("dropped %v, want none more: the watch waits", got)
	}
	var last []historyItem
	for len(h.queue) > 0 {
		last = append(last, <-h.queue)
	}
	if n := len(last); n != historyQueue || last[n-2].event.Event != fence.Expired || last[n-1].through != 7 {
		t.Errorf("queue holds %d items ending with %+v, want %d: the end, then its mark", n, last[max(n-2, 0):], historyQueue)
	}
}

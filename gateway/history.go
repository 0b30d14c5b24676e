package gateway

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
)

// The lock history is written off the request path: a grant, a release,
// a write never waits for it. Events wait in a bounded queue for one
// goroutine that writes them in batches; past the queue's bound an event
// is dropped, counted in fencegw_history_dropped_total and logged (at
// most once a historyLogEvery), never waited for.
const (
	historyQueue    = 4096
	historyBatch    = 256
	historyTimeout  = 5 * time.Second
	historyLogEvery = 10 * time.Second
)

// historian records lock history events in fencegw.lock_history.
type historian struct {
	store    *fence.Store
	log      *slog.Logger
	queue    chan fence.HistoryEvent
	dropped  prometheus.Counter
	recorded *prometheus.CounterVec
	dropLog  rate.Sometimes
	// watching is closed once the watch of lease ends is set up.
	watching     chan struct{}
	watchingOnce sync.Once
}

func newHistorian(store *fence.Store, log *slog.Logger, reg *prometheus.Registry) *historian {
	h := &historian{
		store: store, log: log, queue: make(chan fence.HistoryEvent, historyQueue), watching: make(chan struct{}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fencegw_history_dropped_total",
			Help: "Lock history events not recorded in fencegw.lock_history because the history queue was full (each is in the log, at most one line per 10 s).",
		}),
		recorded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegw_history_events_total",
			Help: "Lock history events this replica queued for fencegw.lock_history, by event (granted, released, expired, revoked, lock-delay, fence-advanced); every replica queues the ends it sees, the table keeps one.",
		}, []string{"event"}),
		dropLog: rate.Sometimes{Interval: historyLogEvery},
	}
	reg.MustRegister(h.dropped, h.recorded)
	return h
}

// add queues e; it never blocks.
func (h *historian) add(e fence.HistoryEvent) {
	select {
	case h.queue <- e:
		h.recorded.WithLabelValues(e.Event).Inc()
	default:
		h.dropped.Inc()
		h.dropLog.Do(func() {
			h.log.Warn("lock history queue full: events dropped (fencegw_history_dropped_total counts them)",
				"resource", e.Resource, "event", e.Event, "lease", e.LeaseID)
		})
	}
}

// run writes queued events in batches until ctx ends.
func (h *historian) run(ctx context.Context) {
	batch := make([]fence.HistoryEvent, 0, historyBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-h.queue:
			batch = append(batch[:0], e)
		}
	drain:
		for len(batch) < historyBatch {
			select {
			case e := <-h.queue:
				batch = append(batch, e)
			default:
				break drain
			}
		}
		wctx, cancel := context.WithTimeout(ctx, historyTimeout)
		if err := h.store.RecordHistory(wctx, batch); err != nil && ctx.Err() == nil {
			// Best effort: the grants and ends stand, and etcd decided them.
			h.log.Warn("recording lock history failed", "events", len(batch), "error", err)
		}
		cancel()
	}
}

// ended queues a lease's end as this replica's watch saw it, and the
// lock-delay that follows it, if any.
func (h *historian) ended(e authority.LeaseEnd) {
	ev := fence.HistoryEvent{At: e.At, Resource: e.Resource, Event: e.How, LeaseID: e.ID.String(),
		Client: e.Owner, Token: e.Token.Unsigned().String(), Actor: e.Actor, Reason: e.Reason}
	h.add(ev)
	if e.LockDelay {
		ev.Event, ev.Actor, ev.Reason = fence.LockDelayed, "", ""
		h.add(ev)
	}
}

// RunHistory records the lock history until ctx ends: the grants this
// replica makes, the operators' revokes and advances it serves, and every
// lease end it sees in etcd (each replica sees them all; the table keeps
// one of each). Without it, nothing is recorded.
func (g *Gateway) RunHistory(ctx context.Context) {
	done := make(chan struct{})
	go func() { defer close(done); g.history.run(ctx) }()
	g.cfg.Authority.WatchLeaseEnds(ctx, g.history.ended, func() { g.history.watchingOnce.Do(func() { close(g.history.watching) }) })
	<-done
}

// HistoryWatching is closed once RunHistory watches etcd for lease ends:
// every end after it is recorded.
func (g *Gateway) HistoryWatching() <-chan struct{} { return g.history.watching }

// recordGrant queues the grant of lease to client.
func (g *Gateway) recordGrant(lease authority.Lease, client string) {
	g.history.add(fence.HistoryEvent{At: time.Now(), Resource: lease.Resource, Event: fence.Granted, LeaseID: lease.ID.String(),
		Client: client, Token: lease.Token.Unsigned().String()})
}

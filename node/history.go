package node

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/policy"
)

// The lock history is written off the request path: a grant, a release,
// a write never waits for it. Events wait in a bounded queue for one
// goroutine that writes them in batches; past the queue's bound a
// request's event is dropped, counted in fencegw_history_dropped_total
// and logged (at most once a historyLogEvery), never waited for. The
// watch of lease ends waits for room (ended).
const (
	historyQueue    = 4096
	historyBatch    = 256
	historyTimeout  = 5 * time.Second
	historyLogEvery = 10 * time.Second
)

// historian records lock history events in fencegw.lock_history.
type historian struct {
	store    *fence.Store
	policy   *policy.Policy // how a token of a resource is shown (a permit slot's E:R#k)
	log      *slog.Logger
	queue    chan historyItem
	dropped  prometheus.Counter
	recorded *prometheus.CounterVec
	dropLog  rate.Sometimes
	// watching is closed once the watch of lease ends is set up.
	watching     chan struct{}
	watchingOnce sync.Once
	// identity is the etcd cluster's, which the history's cursor names
	// (set by RunHistory before it starts run).
	identity string
	// moving says this replica may move the cursor: false when its watch
	// did not resume at it, or once a write of ends it covers failed, for
	// the rest of the run (a replica resuming at the cursor reports those
	// ends again). The watch reads it too (ended).
	moving atomic.Bool
	// resumeAt is where the watch starts, once ResumeHistory read it
	// (resumed).
	resumeAt int64
	resumed  bool
}

// historyItem is an event to record, or (through > 0) a mark in the
// queue: every lease end at or before etcd revision through was queued
// before it, so the history's cursor may move to through once the events
// before it are recorded.
type historyItem struct {
	event   fence.HistoryEvent
	through int64
}

func newHistorian(store *fence.Store, pol *policy.Policy, log *slog.Logger) *historian {
	h := &historian{
		store: store, policy: pol, log: log, queue: make(chan historyItem, historyQueue), watching: make(chan struct{}),
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
	return h
}

// AddHistory queues e for the lock history: a grant this replica made, an
// operator's revoke or fence advance it served. It never blocks: past the
// queue's bound, e is dropped and counted.
func (n *Node) AddHistory(e fence.HistoryEvent) { n.history.add(e) }

// add is AddHistory.
func (h *historian) add(e fence.HistoryEvent) {
	select {
	case h.queue <- historyItem{event: e}:
		h.recorded.WithLabelValues(e.Event).Inc()
	default:
		h.dropped.Inc()
		h.dropLog.Do(func() {
			h.log.Warn("lock history queue full: events dropped (fencegw_history_dropped_total counts them)",
				"resource", e.Resource, "event", e.Event, "lease", e.LeaseID)
		})
	}
}

// reported queues the mark that every lease end through etcd revision
// rev is queued, waiting for room as ended does, until ctx ends.
func (h *historian) reported(ctx context.Context, rev int64) {
	select {
	case h.queue <- historyItem{through: rev}:
	case <-ctx.Done():
	}
}

// run writes queued events in batches, with the history's cursor at the
// last mark among them, until ctx ends.
func (h *historian) run(ctx context.Context) {
	batch := make([]fence.HistoryEvent, 0, historyBatch)
	for {
		var first historyItem
		select {
		case <-ctx.Done():
			return
		case first = <-h.queue:
		}
		batch = batch[:0]
		var cursor fence.HistoryCursor
		take := func(it historyItem) {
			if it.through > 0 {
				cursor = fence.HistoryCursor{Identity: h.identity, Revision: it.through}
				return
			}
			batch = append(batch, it.event)
		}
		take(first)
	drain:
		for len(batch) < historyBatch {
			select {
			case it := <-h.queue:
				take(it)
			default:
				break drain
			}
		}
		if !h.moving.Load() {
			cursor = fence.HistoryCursor{}
		}
		wctx, cancel := context.WithTimeout(ctx, historyTimeout)
		if err := h.store.RecordHistory(wctx, batch, cursor); err != nil && ctx.Err() == nil {
			// Best effort: the grants and ends stand, and etcd decided them.
			// The cursor stayed before these ends, and stays there: a later
			// mark would pass them. A replica that resumes at it (this one,
			// restarted) reports them again.
			h.log.Warn("recording lock history failed; the history's cursor stays where it was until the history restarts",
				"events", len(batch), "error", err)
			h.moving.Store(false)
		}
		cancel()
	}
}

// ended queues a lease's end as this replica's watch saw it, and the
// lock-delay that follows it, if any. Unlike add, it waits for room in
// the queue (until ctx ends; queueEnd): the watch is on no request's path,
// and an end dropped would be passed by the next mark, the cursor with it,
// where a watch resumed at the cursor replays every end since.
func (h *historian) ended(ctx context.Context, e authority.LeaseEnd) {
	ev := fence.HistoryEvent{At: e.At, Resource: e.Resource, Event: e.How, LeaseID: e.ID.String(),
		Client: e.Owner, Token: h.policy.ShownToken(e.Resource, e.Token).String(), Actor: e.Actor, Reason: e.Reason}
	h.queueEnd(ctx, ev)
	if e.LockDelay {
		ev.Event, ev.Actor, ev.Reason = fence.LockDelayed, "", ""
		h.queueEnd(ctx, ev)
	}
}

// queueEnd queues e once there is room, or drops it (counted) when ctx
// ends first. While this replica does not move the cursor (moving), no
// mark passes an end dropped, and a full queue drops it as add does:
// waiting would only pile the watch's responses up in memory.
func (h *historian) queueEnd(ctx context.Context, e fence.HistoryEvent) {
	if !h.moving.Load() {
		h.add(e)
		return
	}
	select {
	case h.queue <- historyItem{event: e}:
		h.recorded.WithLabelValues(e.Event).Inc()
	case <-ctx.Done():
		h.dropped.Inc()
	}
}

// RunHistory records the lock history until ctx ends: the grants this
// replica makes, the operators' revokes and advances it serves, and every
// lease end it sees in etcd (each replica sees them all; the table keeps
// one of each). It resumes the watch of ends after the history's cursor,
// so that the ends that came while no replica watched are recorded too.
// Without it, nothing is recorded.
func (n *Node) RunHistory(ctx context.Context) {
	h := n.history
	from := h.resumeAt
	if !h.resumed {
		from = n.historyResumesAt(ctx)
	}
	h.resumed = false // a later run reads it afresh
	done := make(chan struct{})
	go func() { defer close(done); h.run(ctx) }()
	n.cfg.Authority.WatchLeaseEnds(ctx, authority.EndsWatch{
		From:     from,
		Ended:    func(e authority.LeaseEnd) { h.ended(ctx, e) },
		Reported: func(rev int64) { h.reported(ctx, rev) },
		Watching: func() { h.watchingOnce.Do(func() { close(h.watching) }) },
		Missed: func(from, to int64) {
			h.log.Warn("lock history: etcd compacted past the revisions the watch of lease ends resumes at; the ends between them, if any, are not recorded",
				"from_revision", from, "to_revision", to)
		},
	})
	<-done
}

// ResumeHistory reads where RunHistory's watch of lease ends will start:
// serve calls it before it serves, so that the end of a lease granted
// once it serves is recorded however late the watch is set up (on a busy
// machine, after the first leases came and went). RunHistory reads it
// itself if ResumeHistory was not called, or could not read it.
func (n *Node) ResumeHistory(ctx context.Context) {
	from := n.historyResumesAt(ctx)
	// 0: etcd or the cursor could not be read; RunHistory tries again.
	n.history.resumeAt, n.history.resumed = from, from != 0
}

// historyResumesAt is the revision the watch of lease ends starts at: the
// one after the history's cursor, when the cursor is of this etcd cluster
// and not past its revision (a cluster restored from a snapshot goes
// back: such a cursor is dropped); with no such cursor, the one after
// etcd's revision now; 0 (from whenever the watch is set up) when either
// could not be read. It reads the
// cluster's identity for the cursor's writes, and says whether this
// replica may move the cursor (moving).
func (n *Node) historyResumesAt(ctx context.Context) int64 {
	h := n.history
	h.moving.Store(false)
	ctx, cancel := context.WithTimeout(ctx, historyTimeout)
	defer cancel()
	view, err := n.cfg.Authority.IdentifiedView(ctx)
	if err != nil {
		h.log.Warn("lock history: etcd's identity unread: lease ends are watched from now, and the history's cursor stays where it is", "error", err)
		return 0
	}
	h.identity = view.Identity
	cursor, err := fence.ReadHistoryCursor(ctx, n.cfg.Pool)
	switch {
	case err != nil:
		// Watched from now, the ends since the cursor are not seen: the
		// cursor must stay for a replica that resumes at it.
		h.log.Warn("lock history: the cursor unread: lease ends are watched from now, and the history's cursor stays where it is", "error", err)
		return 0
	case cursor.Identity != view.Identity || cursor.Revision == 0:
		// Another cluster's, or none: nothing to resume.
		h.moving.Store(true)
		return view.Revision + 1
	case cursor.Revision > view.Revision:
		// Kept, it would pass the ends etcd's revisions bring up to it
		// again, which no replica may have seen.
		if err := fence.DropHistoryCursor(ctx, n.cfg.Pool, cursor); err != nil {
			h.log.Warn("lock history: the cursor is past etcd's revision (restored from a snapshot?) and could not be dropped: lease ends are watched from now, and the history's cursor stays where it is",
				"cursor", cursor.Revision, "revision", view.Revision, "error", err)
			return 0
		}
		h.log.Warn("lock history: the cursor is past etcd's revision (restored from a snapshot?): dropped, lease ends are watched from now",
			"cursor", cursor.Revision, "revision", view.Revision)
		h.moving.Store(true)
		return view.Revision + 1
	}
	h.moving.Store(true)
	return cursor.Revision + 1
}

// HistoryWatching is closed once RunHistory watches etcd for lease ends:
// every end after it is recorded.
func (n *Node) HistoryWatching() <-chan struct{} { return n.history.watching }

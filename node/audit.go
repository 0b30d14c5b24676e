package node

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/fencegw/fencegw/fence"
)

// Audit limits, per client (the anonymous class is one) and kind of
// refusal. A client may have auditRate refusals of one kind recorded per
// second, in bursts of auditBurst (the first refusals after a quiet spell
// are all recorded); past that, one row per resource and flush stands for
// the rest (fence.Rejection.Suppressed), for at most auditClientSummaries
// resources a flush, the rest in one row under resource "*". A client's
// flood, over any number of resources, thus costs at most 10 + 10 + 1 rows
// a second of each kind, off the request path; it cannot hide another
// resource's refusal in its own summary, nor take another client's place
// (the janitor trims each client's rows apart: fence.MaxRejections).
const (
	auditRate            = rate.Limit(10)
	auditBurst           = 50
	auditQueue           = 4096        // refusals waiting for the flusher; more are dropped, and counted
	auditBatch           = 256         // rows per insert
	auditEvery           = time.Second // how often summaries of suppressed refusals are written
	auditTimeout         = 5 * time.Second
	auditMaxLimits       = 10_000 // clients × reasons remembered; then forgotten all at once
	auditClientSummaries = 10     // summary rows of one client and kind a flush, besides "*"
)

// allResources is the resource of a summary that stands for refusals of
// more resources than a flush has summary rows for.
const allResources = "*"

// auditKey is what the audit's rate is per: a refusal's client and kind.
// Callers without a client are policy.Anonymous, a name no client of the
// policy may take: one class of their own.
type auditKey struct{ client, reason string }

// summaryKey is what a summary row is per.
type summaryKey struct {
	auditKey
	resource string
}

// auditor records refusals in fencegw.rejections, off the request path.
type auditor struct {
	store   *fence.Store
	log     *slog.Logger
	queue   chan fence.Rejection
	dropped prometheus.Counter

	mu         sync.Mutex
	limits     map[auditKey]*rate.Limiter
	suppressed map[summaryKey]*fence.Rejection // the newest refusal past the rate, with the count
	summarized map[auditKey]int                // resources in suppressed, per client and kind
}

func newAuditor(store *fence.Store, log *slog.Logger) *auditor {
	return &auditor{
		store: store, log: log, queue: make(chan fence.Rejection, auditQueue),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fencegw_audit_dropped_total",
			Help: "Refusals not recorded in fencegw.rejections because the audit queue was full (they are still logged and counted in fencegw_rejections_total).",
		}),
		limits: map[auditKey]*rate.Limiter{}, suppressed: map[summaryKey]*fence.Rejection{}, summarized: map[auditKey]int{},
	}
}

// Audit queues r for fencegw.rejections, unless its client is past its
// rate for r's reason; then it is counted into the next summary row. It
// never blocks. The gateway's refusals and the SQL front's come here
// alike, under the same limits per client and kind of refusal.
func (n *Node) Audit(r fence.Rejection) { n.audit.add(r) }

// add is Audit.
func (a *auditor) add(r fence.Rejection) {
	k := auditKey{r.Client, r.Reason}
	a.mu.Lock()
	lim := a.limits[k]
	if lim == nil {
		if len(a.limits) >= auditMaxLimits {
			clear(a.limits)
		}
		lim = rate.NewLimiter(auditRate, auditBurst)
		a.limits[k] = lim
	}
	if !lim.Allow() {
		sk := summaryKey{k, r.Resource}
		if a.suppressed[sk] == nil && a.summarized[k] >= auditClientSummaries {
			sk.resource, r.Resource = allResources, allResources
		}
		n := int64(1)
		if s := a.suppressed[sk]; s != nil {
			n += s.Suppressed + 1
		} else if sk.resource != allResources {
			a.summarized[k]++
		}
		r.Suppressed = n - 1
		a.suppressed[sk] = &r
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	select {
	case a.queue <- r:
	default:
		a.dropped.Inc()
	}
}

// run writes queued refusals in batches, and summaries of suppressed ones
// every auditEvery, until ctx ends.
func (a *auditor) run(ctx context.Context) {
	t := time.NewTicker(auditEvery)
	defer t.Stop()
	batch := make([]fence.Rejection, 0, auditBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-a.queue:
			batch = append(batch[:0], r)
		drain:
			for len(batch) < auditBatch {
				select {
				case r := <-a.queue:
					batch = append(batch, r)
				default:
					break drain
				}
			}
		case <-t.C:
			batch = a.summaries(batch[:0])
		}
		a.write(ctx, batch)
	}
}

// summaries takes the summary rows of suppressed refusals.
func (a *auditor) summaries(batch []fence.Rejection) []fence.Rejection {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, r := range a.suppressed {
		batch = append(batch, *r) // the newest suppressed refusal, standing for the others too
		delete(a.suppressed, k)
	}
	clear(a.summarized)
	return batch
}

func (a *auditor) write(ctx context.Context, batch []fence.Rejection) {
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, auditTimeout)
	defer cancel()
	if err := a.store.RecordRejections(ctx, batch); err != nil && ctx.Err() == nil {
		// Best effort: the refusals stand, and each is in the log.
		a.log.Warn("recording refusals failed", "rows", len(batch), "error", err)
	}
}

// RunAudit records the queued refusals in fencegw.rejections until ctx
// ends; without it, refusals are only logged and counted.
func (n *Node) RunAudit(ctx context.Context) { n.audit.run(ctx) }

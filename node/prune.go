package node

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/tokens"
)

// DefaultPruneEvery is how often a node prunes fence rows by default.
// A round walks every row (in batches), so it is not run as often as the
// janitor's other work.
const DefaultPruneEvery = 10 * time.Minute

// tableSizesEvery is how often the table-size gauges are refreshed.
const tableSizesEvery = time.Minute

// stateMetrics are the sizes of the gateway's own state, which the
// janitor keeps down.
type stateMetrics struct {
	rows, bytes  *prometheus.GaugeVec
	floorEpoch   prometheus.Gauge
	floorRev     prometheus.Gauge
	prunedFences prometheus.Counter
	// prunedTransitions counts the etcd transitions keys of idle locks
	// deleted (PruneTransitions).
	prunedTransitions prometheus.Counter
}

func newStateMetrics() *stateMetrics {
	return &stateMetrics{
		rows: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fencegw_table_rows",
			Help: "Rows of each table of the fencegw schema (counted below 100,000, estimated from PostgreSQL's statistics above), refreshed every minute.",
		}, []string{"table"}),
		bytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fencegw_table_bytes",
			Help: "Bytes on disk of each table of the fencegw schema with its indexes, refreshed every minute.",
		}, []string{"table"}),
		floorEpoch: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fencegw_fence_floor_epoch",
			Help: "The fence floor's epoch, as this replica last read or raised it.",
		}),
		floorRev: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fencegw_fence_floor_revision",
			Help: "The fence floor's revision: a resource without a fence row refuses tokens at or below the floor.",
		}),
		prunedFences: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fencegw_fences_pruned_total",
			Help: "Fence rows this replica deleted at or below the fence floor.",
		}),
		prunedTransitions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fencegw_transitions_pruned_total",
			Help: "etcd transitions keys (a lock's grant count) this replica deleted for locks nobody held or waited for.",
		}),
	}
}

// PruneResult is what one round of pruning did.
type PruneResult struct {
	// Floor is the fence floor after the round.
	Floor tokens.Token
	// Pruned counts the fence rows deleted.
	Pruned int64
}

// PruneFences raises the fence floor below every token a live lease holds
// or may be granted (authority.Etcd.TokenFloor) and deletes the fence rows
// at or below it (fence.Store.PruneFences). A halted authority raises
// nothing: an etcd gone back in time or replaced does not speak for the
// tokens. ctx bounds it.
func (n *Node) PruneFences(ctx context.Context) (PruneResult, error) {
	if err := n.cfg.Authority.Halted(); err != nil {
		return PruneResult{}, fmt.Errorf("node: prune fences: %w", err)
	}
	floor, identity, err := n.cfg.Authority.TokenFloor(ctx)
	if err != nil {
		return PruneResult{}, fmt.Errorf("node: prune fences: %w", err)
	}
	var r PruneResult
	if r.Floor, err = n.store.RaiseFloor(ctx, floor, identity); err != nil {
		return r, err
	}
	n.state.floorEpoch.Set(float64(r.Floor.Epoch))
	n.state.floorRev.Set(float64(r.Floor.Revision))
	r.Pruned, err = n.store.PruneFences(ctx)
	n.state.prunedFences.Add(float64(r.Pruned))
	return r, err
}

// RunPruning prunes fence rows and transitions keys every every (0: never) and refreshes the
// table-size gauges every minute, until ctx ends.
func (n *Node) RunPruning(ctx context.Context, every time.Duration) {
	sizes := time.NewTicker(tableSizesEvery)
	defer sizes.Stop()
	var prune <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		prune = t.C
	}
	n.MeasureTables(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-sizes.C:
			n.MeasureTables(ctx)
		case <-prune:
			n.pruneRound(ctx)
		}
	}
}

// RunJanitor deletes, every minute until ctx ends, the rows fencegw no
// longer needs besides the fences: idempotency keys older than retention,
// the audit's and the lock history's oldest (fence.Store.RunJanitor).
func (n *Node) RunJanitor(ctx context.Context, retention time.Duration) {
	n.store.RunJanitor(ctx, retention, n.log)
}

// pruneRound prunes the fence rows, then the transitions keys: each
// whatever became of the other.
func (n *Node) pruneRound(ctx context.Context) {
	start := time.Now()
	r, err := n.PruneFences(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		n.log.Warn("janitor: pruning fence rows failed", "error", err, "pruned", r.Pruned)
	case err == nil:
		n.log.Info("janitor: fence rows pruned", "floor", r.Floor.String(), "pruned", r.Pruned, "took", time.Since(start).Round(time.Millisecond).String())
	}
	start = time.Now()
	pruned, err := n.PruneTransitions(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		n.log.Warn("janitor: pruning transitions keys failed", "error", err, "pruned", pruned)
	case err == nil:
		n.log.Info("janitor: transitions keys of idle locks pruned", "pruned", pruned, "took", time.Since(start).Round(time.Millisecond).String())
	}
}

// PruneTransitions deletes the etcd transitions keys of locks nobody holds
// or waits for (authority.Etcd.PruneTransitions): they count grants for
// people and decide nothing, so a lock's count then says "grants since
// its key was last pruned". A halted authority prunes nothing: its etcd
// does not speak for the locks. ctx bounds it.
func (n *Node) PruneTransitions(ctx context.Context) (int64, error) {
	if err := n.cfg.Authority.Halted(); err != nil {
		return 0, fmt.Errorf("node: prune transitions keys: %w", err)
	}
	pruned, err := n.cfg.Authority.PruneTransitions(ctx)
	n.state.prunedTransitions.Add(float64(pruned))
	if err != nil {
		return pruned, fmt.Errorf("node: prune transitions keys: %w", err)
	}
	return pruned, nil
}

// MeasureTables refreshes the table-size gauges and the floor's.
func (n *Node) MeasureTables(ctx context.Context) {
	sizes, err := fence.TableSizes(ctx, n.cfg.Pool)
	if err != nil {
		if ctx.Err() == nil {
			n.log.Warn("measuring the fencegw tables failed; their gauges keep their last values", "error", err)
		}
		return
	}
	for _, s := range sizes {
		n.state.rows.WithLabelValues(s.Table).Set(float64(s.Rows))
		n.state.bytes.WithLabelValues(s.Table).Set(float64(s.Bytes))
	}
	if f, err := fence.Floor(ctx, n.cfg.Pool); err == nil {
		n.state.floorEpoch.Set(float64(f.Epoch))
		n.state.floorRev.Set(float64(f.Revision))
	}
}

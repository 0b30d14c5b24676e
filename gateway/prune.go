package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/tokens"
)

// DefaultPruneEvery is how often a gateway prunes fence rows by default.
// A round walks every row (in batches), so it is not run as often as the
// janitor's other work.
const DefaultPruneEvery = 10 * time.Minute

// tableSizesEvery is how often the table-size gauges are refreshed.
const tableSizesEvery = time.Minute

// stateMetrics are the sizes of the gateway's own state.
type stateMetrics struct {
	rows, bytes  *prometheus.GaugeVec
	floorEpoch   prometheus.Gauge
	floorRev     prometheus.Gauge
	prunedFences prometheus.Counter
	// prunedTransitions counts the etcd transitions keys of idle locks
	// deleted (PruneTransitions).
	prunedTransitions prometheus.Counter
}

func newStateMetrics(reg *prometheus.Registry) *stateMetrics {
	m := &stateMetrics{
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
	reg.MustRegister(m.rows, m.bytes, m.floorEpoch, m.floorRev, m.prunedFences, m.prunedTransitions)
	return m
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
func (g *Gateway) PruneFences(ctx context.Context) (PruneResult, error) {
	if err := g.cfg.Authority.Halted(); err != nil {
		return PruneResult{}, fmt.Errorf("gateway: prune fences: %w", err)
	}
	floor, identity, err := g.cfg.Authority.TokenFloor(ctx)
	if err != nil {
		return PruneResult{}, fmt.Errorf("gateway: prune fences: %w", err)
	}
	var r PruneResult
	if r.Floor, err = g.store.RaiseFloor(ctx, floor, identity); err != nil {
		return r, err
	}
	g.state.floorEpoch.Set(float64(r.Floor.Epoch))
	g.state.floorRev.Set(float64(r.Floor.Revision))
	r.Pruned, err = g.store.PruneFences(ctx)
	g.state.prunedFences.Add(float64(r.Pruned))
	return r, err
}

// RunPruning prunes fence rows and transitions keys every every (0: never) and refreshes the
// table-size gauges every minute, until ctx ends.
func (g *Gateway) RunPruning(ctx context.Context, every time.Duration) {
	sizes := time.NewTicker(tableSizesEvery)
	defer sizes.Stop()
	var prune <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		prune = t.C
	}
	g.MeasureTables(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-sizes.C:
			g.MeasureTables(ctx)
		case <-prune:
			g.pruneRound(ctx)
		}
	}
}

// pruneRound prunes the fence rows, then the transitions keys: each
// whatever became of the other.
func (g *Gateway) pruneRound(ctx context.Context) {
	start := time.Now()
	r, err := g.PruneFences(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		g.log.Warn("janitor: pruning fence rows failed", "error", err, "pruned", r.Pruned)
	case err == nil:
		g.log.Info("janitor: fence rows pruned", "floor", r.Floor.String(), "pruned", r.Pruned, "took", time.Since(start).Round(time.Millisecond).String())
	}
	start = time.Now()
	n, err := g.PruneTransitions(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		g.log.Warn("janitor: pruning transitions keys failed", "error", err, "pruned", n)
	case err == nil:
		g.log.Info("janitor: transitions keys of idle locks pruned", "pruned", n, "took", time.Since(start).Round(time.Millisecond).String())
	}
}

// PruneTransitions deletes the etcd transitions keys of locks nobody holds
// or waits for (authority.Etcd.PruneTransitions): they count grants for
// people and decide nothing, so a lock's count then says "grants since
// its key was last pruned". A halted authority prunes nothing: its etcd
// does not speak for the locks. ctx bounds it.
func (g *Gateway) PruneTransitions(ctx context.Context) (int64, error) {
	if err := g.cfg.Authority.Halted(); err != nil {
		return 0, fmt.Errorf("gateway: prune transitions keys: %w", err)
	}
	n, err := g.cfg.Authority.PruneTransitions(ctx)
	g.state.prunedTransitions.Add(float64(n))
	if err != nil {
		return n, fmt.Errorf("gateway: prune transitions keys: %w", err)
	}
	return n, nil
}

// MeasureTables refreshes the table-size gauges and the floor's.
func (g *Gateway) MeasureTables(ctx context.Context) {
	sizes, err := fence.TableSizes(ctx, g.cfg.Pool)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Warn("measuring the fencegw tables failed; their gauges keep their last values", "error", err)
		}
		return
	}
	for _, s := range sizes {
		g.state.rows.WithLabelValues(s.Table).Set(float64(s.Rows))
		g.state.bytes.WithLabelValues(s.Table).Set(float64(s.Bytes))
	}
	if f, err := fence.Floor(ctx, g.cfg.Pool); err == nil {
		g.state.floorEpoch.Set(float64(f.Epoch))
		g.state.floorRev.Set(float64(f.Revision))
	}
}

package node

import (
	"cmp"
	"context"
	"errors"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/policy"
)

// Config is what a Node needs; Pool, Authority and Policy are required,
// the same the gateway beside it serves with.
type Config struct {
	Pool      *pgxpool.Pool
	Authority *authority.Etcd
	Policy    *policy.Policy
	Logger    *slog.Logger
	// UnsafeNoFence says the gateway beside it runs without the fence
	// (gateway.Config.UnsafeNoFence): the other replicas are told, as a
	// fence setting of this one's (replicas.go).
	UnsafeNoFence bool
}

// Node is what one running replica does besides answering requests: the
// queues the gateway's handlers feed, the loops that drain and watch, and
// what they keep for the handlers to read. It holds no state another
// replica needs: a node that stops loses its queued events, no more.
type Node struct {
	cfg      Config
	log      *slog.Logger
	store    *fence.Store
	watchdog *authority.Watchdog
	audit    *auditor
	history  *historian
	replicas *replicas
	rates    rateHistory
	state    *stateMetrics
	leases   *leaseMetrics // leases.go
}

// New checks cfg and returns a Node whose loops are not running yet.
func New(cfg Config) (*Node, error) {
	if cfg.Pool == nil || cfg.Authority == nil || cfg.Policy == nil {
		return nil, errors.New("node: Config needs Pool, Authority and Policy")
	}
	// The audit, the history and the fence floor are written through a
	// Store of the node's own: it applies no write, and so needs none of
	// the gateway's settings for them.
	store, err := fence.New(fence.Config{Pool: cfg.Pool})
	if err != nil {
		return nil, err
	}
	log := cmp.Or(cfg.Logger, slog.Default())
	fences := cfg.Policy.FenceSettings()
	if cfg.UnsafeNoFence {
		fences += "\nfencing OFF (--unsafe-no-fence)"
	}
	return &Node{
		cfg: cfg, log: log, store: store,
		watchdog: authority.NewWatchdog(cfg.Authority, fence.Records{DB: cfg.Pool}, log),
		audit:    newAuditor(store, log),
		history:  newHistorian(store, cfg.Policy, log),
		replicas: newReplicas(cfg.Policy.Digest(), fences),
		state:    newStateMetrics(),
		leases:   newLeaseMetrics(),
	}, nil
}

// Watchdog is the rollback watchdog of the token authority: serve runs it
// (Watchdog.Run) and checks once before it serves.
func (n *Node) Watchdog() *authority.Watchdog { return n.watchdog }

// Recheck asks the watchdog for a check now, for a token of an epoch this
// replica has not seen yet (authority.Watchdog.Recheck): the write path's
// only call of it.
func (n *Node) Recheck(ctx context.Context) bool { return n.watchdog.Recheck(ctx) }

// Collectors are the node's metrics, for the registry of the gateway
// beside it: one /metrics serves both.
func (n *Node) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		n.audit.dropped,
		n.history.dropped, n.history.recorded,
		n.state.rows, n.state.bytes, n.state.floorEpoch, n.state.floorRev, n.state.prunedFences, n.state.prunedTransitions,
		n.leases.hold,
		n.replicas.others,
	}
}

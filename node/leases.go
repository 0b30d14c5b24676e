package node

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegw/fencegw/authority"
)

// leaseMetrics are what the node measures of the leases in etcd: how long
// the locks this replica granted were held, and how many leases its
// reaper revoked.
type leaseMetrics struct {
	hold prometheus.Histogram
	// reaped is shown as fencegw_leases_total{event="reaped"}, a series
	// of the gateway's count of lease calls (gateway.Node.Reaped).
	reaped atomic.Int64
}

func newLeaseMetrics() *leaseMetrics {
	return &leaseMetrics{hold: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "fencegw_lease_hold_seconds",
		Help:    "How long granted locks were held, from the grant to the release or expiry, as the replica that granted each observed it (none if that replica was gone by then).",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 18), // up to 109 min: past the longest TTL, renewals aside
	})}
}

// RunHoldTimes measures the hold time of the locks this replica granted
// (those whose observer is Name), in fencegw_lease_hold_seconds, until
// ctx ends (authority.WatchHoldTimes).
func (n *Node) RunHoldTimes(ctx context.Context) {
	n.cfg.Authority.WatchHoldTimes(ctx, n.replicas.self.Name, func(d time.Duration) {
		n.leases.hold.Observe(d.Seconds())
	})
}

// RunReaper revokes, until ctx ends, the leases nobody renews any more and
// the holds past their resource's max_hold (authority.Etcd.RunReaper),
// each logged with why and counted (Reaped).
func (n *Node) RunReaper(ctx context.Context) {
	n.cfg.Authority.RunReaper(ctx, func(id authority.LeaseID, why string) {
		n.leases.reaped.Add(1)
		n.log.Info("lease revoked", "lease", id.String(), "why", why)
	})
}

// Reaped counts the leases RunReaper revoked.
func (n *Node) Reaped() int64 { return n.leases.reaped.Load() }

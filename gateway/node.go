package gateway

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/node"
)

// Node is what the handlers need of the replica's work besides answering
// requests (*node.Node, whose loops serve runs beside the gateway): the
// queues they feed, and what they read of the loops. The gateway runs no
// loop of its own.
type Node interface {
	// Audit queues a refusal of the fence for fencegw.rejections
	// (audit.go); it never blocks.
	Audit(fence.Rejection)
	// AddHistory queues an event of the lock history: a grant
	// (leases.go), an operator's revoke or advance (admin.go); it never
	// blocks.
	AddHistory(fence.HistoryEvent)
	// Name is this replica's: each lease it grants names it as the
	// replica that measures the lease's hold time.
	Name() string
	// PolicyCheck is /readyz's word on the other replicas' policies.
	PolicyCheck() string
	// Rates are the status page's chart, oldest first.
	Rates() []node.RateSample
	// Recheck asks the authority's watchdog to check now, for a token of
	// an epoch this replica has not seen yet (apply.go).
	Recheck(ctx context.Context) bool
	// Reaped counts the leases the node's reaper revoked, shown as
	// fencegw_leases_total{event="reaped"} (metrics.go).
	Reaped() int64
	// Collectors are the node's own metrics, served on /metrics beside
	// the gateway's.
	Collectors() []prometheus.Collector
}

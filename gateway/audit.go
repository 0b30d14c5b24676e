package gateway

import (
	"cmp"
	"context"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
)

// audit queues a write the fence refused for fencegw.rejections (Node.Audit,
// which writes it off the request path, under limits per client and kind
// of refusal): those refusals are worth a durable record, the evidence of
// a holder acting on a lock it no longer had, or on a token nobody issued.
func (g *Gateway) audit(ctx context.Context, p Problem) {
	if !fenceRefusals[p.Kind()] {
		return
	}
	e := accessOf(ctx)
	g.cfg.Node.Audit(fence.Rejection{
		Resource: p.Resource, Operation: p.refusedOperation(), Reason: p.Kind(), Presented: p.PresentedToken, Current: p.CurrentToken,
		Client: cmp.Or(clientName(ctx), anonymous), RequestID: e.id, RemoteAddr: e.remote,
	})
}

// RunHoldTimes measures the hold time of the locks this gateway granted,
// in fencegw_lease_hold_seconds, until ctx ends (authority.WatchHoldTimes).
func (g *Gateway) RunHoldTimes(ctx context.Context) {
	g.cfg.Authority.WatchHoldTimes(ctx, g.cfg.Node.Name(), func(d time.Duration) {
		g.metrics.leaseHold.Observe(d.Seconds())
	})
}

// RunReaper revokes, until ctx ends, the leases nobody renews any more and
// the holds past their resource's max_hold (authority.Etcd.RunReaper),
// each logged with why.
func (g *Gateway) RunReaper(ctx context.Context) {
	g.cfg.Authority.RunReaper(ctx, func(id authority.LeaseID, why string) {
		g.metrics.leases.WithLabelValues("reaped").Inc()
		g.log.Info("lease revoked", "lease", id.String(), "why", why)
	})
}

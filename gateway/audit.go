package gateway

import (
	"cmp"
	"context"

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

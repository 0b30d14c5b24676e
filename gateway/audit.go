package gateway

import (
	"context"
	"time"

	"github.com/fencegw/fencegw/fence"
)

// auditTimeout bounds the insert of one rejection.
const auditTimeout = time.Second

// auditedProblems are the refusals worth a durable record: they mean a
// holder acted on a lock it no longer had, or on a token nobody issued.
var auditedProblems = map[string]bool{"stale-token": true, "token-rejected": true}

// audit records a refused write in fencegw.rejections. It is best effort:
// the refusal stands whether or not it is recorded, and it is in the log.
func (g *Gateway) audit(ctx context.Context, p Problem) {
	if !auditedProblems[p.Kind()] {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	err := g.store.RecordRejection(ctx, fence.Rejection{
		Resource: p.Resource, Operation: p.Operation, Reason: p.Kind(), Presented: p.PresentedToken, Current: p.CurrentToken,
	})
	if err != nil {
		g.log.Warn("recording a rejection failed", "error", err)
	}
}

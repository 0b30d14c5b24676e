package gateway

import (
	"context"
	"time"
)

// Janitor limits.
const (
	// MaxRejections bounds the rejection audit table.
	MaxRejections = 10000
	janitorEvery  = time.Minute
	auditTimeout  = time.Second
)

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
	_, err := g.cfg.Pool.Exec(ctx,
		"INSERT INTO fencegw.rejections (resource, operation, reason, presented, current) VALUES ($1, $2, $3, $4, $5)",
		p.Resource, p.Operation, p.Kind(), p.PresentedToken, p.CurrentToken)
	if err != nil {
		g.log.Warn("recording a rejection failed", "error", err)
	}
}

// RunJanitor deletes expired idempotency keys and trims the rejection audit
// to its newest MaxRejections rows, once a minute, until ctx ends. Several
// replicas may run it; the deletes are idempotent.
func (g *Gateway) RunJanitor(ctx context.Context) {
	t := time.NewTicker(janitorEvery)
	defer t.Stop()
	for {
		g.sweep(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (g *Gateway) sweep(ctx context.Context) {
	if _, err := g.cfg.Pool.Exec(ctx, "DELETE FROM fencegw.idempotency_keys WHERE created_at < now() - $1::interval", g.retention); err != nil && ctx.Err() == nil {
		g.log.Warn("janitor: expiring idempotency keys failed", "error", err)
	}
	if _, err := g.cfg.Pool.Exec(ctx, "DELETE FROM fencegw.rejections WHERE id <= (SELECT max(id) FROM fencegw.rejections) - $1", MaxRejections); err != nil && ctx.Err() == nil {
		g.log.Warn("janitor: trimming rejections failed", "error", err)
	}
}

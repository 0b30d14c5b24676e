package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/tokens"
)

// DefaultAuthorityCheck is how often a gateway compares etcd with what
// PostgreSQL remembers of it: the longest a rollback of etcd goes unnoticed.
const DefaultAuthorityCheck = 2 * time.Second

type querier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}

// LoadAuthority reads PostgreSQL's record of the current epoch.
func LoadAuthority(ctx context.Context, q querier) (tokens.Record, error) {
	var rec tokens.Record
	err := q.QueryRow(ctx, "SELECT epoch, coalesce(cluster_id, ''), max_revision FROM fencegw.authority ORDER BY epoch DESC LIMIT 1").
		Scan(&rec.Epoch, &rec.ClusterID, &rec.MaxRevision)
	if err != nil {
		return rec, fmt.Errorf("%w: reading fencegw.authority: %w", ErrUnavailable, err)
	}
	return rec, nil
}

// AuthorityHistory reads the record of every epoch, oldest first.
func AuthorityHistory(ctx context.Context, pool *pgxpool.Pool) ([]tokens.Record, error) {
	rows, err := pool.Query(ctx, "SELECT epoch, coalesce(cluster_id, ''), max_revision FROM fencegw.authority ORDER BY epoch")
	if err != nil {
		return nil, fmt.Errorf("%w: reading fencegw.authority: %w", ErrUnavailable, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (tokens.Record, error) {
		var rec tokens.Record
		err := r.Scan(&rec.Epoch, &rec.ClusterID, &rec.MaxRevision)
		return rec, err
	})
}

// CheckAuthority runs one reconciliation of etcd with PostgreSQL: it halts
// the authority if etcd went backwards (lower epoch or revision, another
// cluster), and otherwise records the newest revision and resumes it. An
// unreachable etcd or PostgreSQL is reported, not a reason to halt.
func (g *Gateway) CheckAuthority(ctx context.Context) error {
	g.authorityMu.Lock() // the guard and recheckAuthority: one check at a time
	defer g.authorityMu.Unlock()
	auth := g.cfg.Authority
	// Everything compared with etcd's view must be read before it: the view
	// is linearizable, so it is at least as new as any revision seen
	// earlier, here or by another replica that recorded it. Read after it,
	// normal traffic would look like etcd going back in time.
	rec, err := LoadAuthority(ctx, g.cfg.Pool)
	if err != nil {
		return err
	}
	var seen int64
	if auth.Epoch() == rec.Epoch {
		seen = auth.NewestRevision()
	}
	view, err := auth.View(ctx)
	if err != nil {
		return err
	}
	next, err := tokens.Reconcile(view, rec, seen)
	var halt *tokens.HaltedError
	if errors.As(err, &halt) {
		if auth.Halted() == nil {
			g.log.Error("token authority halted: writes and leases are refused", "reason", halt.Reason)
		}
		auth.Halt(halt)
		return halt
	}
	_, err = g.cfg.Pool.Exec(ctx,
		"UPDATE fencegw.authority SET cluster_id = $2, max_revision = greatest(max_revision, $3), updated_at = now() WHERE epoch = $1",
		next.Epoch, next.ClusterID, next.MaxRevision)
	if err != nil {
		return fmt.Errorf("%w: recording the etcd revision: %w", ErrUnavailable, err)
	}
	if auth.Halted() != nil || auth.Epoch() != next.Epoch {
		g.log.Info("token authority in service", "epoch", next.Epoch, "etcd_cluster", next.ClusterID, "revision", view.Revision)
	}
	auth.Resume(next.Epoch, view.Revision)
	return nil
}

// authorityRecheckEvery bounds the checks that tokens of a newer epoch
// than this gateway knows can trigger: a forged one must not buy a
// PostgreSQL query and an etcd read per request.
const authorityRecheckEvery = 250 * time.Millisecond

// recheckAuthority runs CheckAuthority at once, unless one ran on demand
// less than authorityRecheckEvery ago, and reports whether it ran and
// succeeded.
func (g *Gateway) recheckAuthority(ctx context.Context) bool {
	now, last := time.Now().UnixNano(), g.lastRecheck.Load()
	if now-last < int64(authorityRecheckEvery) || !g.lastRecheck.CompareAndSwap(last, now) {
		return false
	}
	return g.CheckAuthority(ctx) == nil
}

// RunAuthorityGuard calls CheckAuthority every interval until ctx ends.
func (g *Gateway) RunAuthorityGuard(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, every)
		if err := g.CheckAuthority(cctx); err != nil && ctx.Err() == nil && !errors.Is(err, tokens.ErrHalted) {
			g.log.Warn("checking the token authority failed", "error", err)
		}
		cancel()
	}
}

// BumpEpoch starts a new epoch after etcd was restored or replaced: one
// above both etcd's and PostgreSQL's, recorded first in PostgreSQL (with
// etcd's current cluster and revision) and then in etcd. Every token of an
// older epoch is stale from then on. Gateways resume at their next check.
func BumpEpoch(ctx context.Context, pool *pgxpool.Pool, auth *tokens.Etcd) (int64, error) {
	view, err := auth.View(ctx)
	if err != nil {
		return 0, err
	}
	rec, err := LoadAuthority(ctx, pool)
	if err != nil {
		return 0, err
	}
	next := max(view.Epoch, rec.Epoch) + 1
	_, err = pool.Exec(ctx, "INSERT INTO fencegw.authority (epoch, cluster_id, max_revision) VALUES ($1, $2, $3)",
		next, view.ClusterID, view.Revision)
	if err != nil {
		return 0, fmt.Errorf("gateway: epoch bump: recording epoch %d in PostgreSQL: %w", next, err)
	}
	// If this fails, PostgreSQL is ahead of etcd and the gateways stay
	// halted; running the bump again moves both to the next epoch.
	if err := auth.SetEpoch(ctx, next); err != nil {
		return 0, fmt.Errorf("gateway: epoch bump: epoch %d is in PostgreSQL but not in etcd, run the bump again: %w", next, err)
	}
	return next, nil
}

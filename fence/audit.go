package fence

import (
	"context"
	"log/slog"
	"time"
)

// MaxRejections bounds the rejection audit table (fencegw.rejections).
const MaxRejections = 10000

// Rejection is a refused write worth a durable record: a holder acted on
// a lock it no longer had, or on a token nobody issued.
type Rejection struct {
	Resource, Operation, Reason string
	Presented, Current          string // tokens, "" when not known
}

// RecordRejection adds r to the audit. ctx bounds the insert.
func (s *Store) RecordRejection(ctx context.Context, r Rejection) error {
	_, err := s.pool.Exec(ctx,
		"INSERT INTO fencegw.rejections (resource, operation, reason, presented, current) VALUES ($1, $2, $3, $4, $5)",
		r.Resource, r.Operation, r.Reason, r.Presented, r.Current)
	return err
}

// janitorEvery is how often RunJanitor sweeps.
const janitorEvery = time.Minute

// RunJanitor deletes idempotency keys older than retention and trims the
// rejection audit to its newest MaxRejections rows, once a minute, until
// ctx ends. Several replicas may run it; the deletes are idempotent.
func (s *Store) RunJanitor(ctx context.Context, retention time.Duration, log *slog.Logger) {
	t := time.NewTicker(janitorEvery)
	defer t.Stop()
	for {
		s.Sweep(ctx, retention, log)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep is one round of RunJanitor.
func (s *Store) Sweep(ctx context.Context, retention time.Duration, log *slog.Logger) {
	if _, err := s.pool.Exec(ctx, "DELETE FROM fencegw.idempotency_keys WHERE created_at < now() - $1::interval", retention); err != nil && ctx.Err() == nil {
		log.Warn("janitor: expiring idempotency keys failed", "error", err)
	}
	if _, err := s.pool.Exec(ctx, "DELETE FROM fencegw.rejections WHERE id <= (SELECT max(id) FROM fencegw.rejections) - $1", MaxRejections); err != nil && ctx.Err() == nil {
		log.Warn("janitor: trimming rejections failed", "error", err)
	}
}

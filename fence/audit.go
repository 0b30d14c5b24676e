package fence

import (
	"context"
	"log/slog"
	"time"
)

// MaxRejections bounds the rejection audit (fencegw.rejections), per
// reason: a flood of one kind of refusal (forged tokens) cannot push out
// the evidence of another (a stale holder's write).
const MaxRejections = 10000

// Rejection is a refused write worth a durable record: a holder acted on
// a lock it no longer had, or on a token nobody issued.
type Rejection struct {
	Resource, Operation, Reason string
	Presented, Current          string // tokens, "" when not known
	// Who was refused: the client's name ("anonymous" without one), the
	// request's id, and its remote address.
	Client, RequestID, RemoteAddr string
	// Suppressed counts the refusals of the same client and reason this
	// row stands for besides itself, not recorded one by one.
	Suppressed int64
}

// RecordRejections adds rs to the audit in one statement. ctx bounds it.
func (s *Store) RecordRejections(ctx context.Context, rs []Rejection) error {
	if len(rs) == 0 {
		return nil
	}
	cols := make([][]string, 8)
	suppressed := make([]int64, len(rs))
	for i, r := range rs {
		for c, v := range []string{r.Resource, r.Operation, r.Reason, r.Presented, r.Current, r.Client, r.RequestID, r.RemoteAddr} {
			cols[c] = append(cols[c], v)
		}
		suppressed[i] = r.Suppressed
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO fencegw.rejections (resource, operation, reason, presented, current, client, request_id, remote_addr, suppressed)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[])`,
		cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], suppressed)
	return err
}

// janitorEvery is how often RunJanitor sweeps.
const janitorEvery = time.Minute

// RunJanitor deletes idempotency keys older than retention and trims the
// rejection audit to its newest MaxRejections rows of each reason, once a minute, until
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
	if _, err := s.pool.Exec(ctx, `DELETE FROM fencegw.rejections WHERE id IN (
		SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY reason ORDER BY id DESC) AS n FROM fencegw.rejections) r
		 WHERE n > $1)`, MaxRejections); err != nil && ctx.Err() == nil {
		log.Warn("janitor: trimming rejections failed", "error", err)
	}
}

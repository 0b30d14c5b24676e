package fence

import (
	"context"
	"log/slog"
	"time"
)

// The rejection audit (fencegw.rejections) is trimmed per reason and per
// client, so that a flood — forged tokens from one client, or from the
// anonymous class, over any number of resources — pushes out only its own
// rows: never another client's, nor another kind of refusal (a stale
// holder's write). Each (reason, client) keeps its newest MaxRejections
// rows and, for FirstsKeptFor, the first FirstRejectionsKept of each hour,
// so the start of an incident outlives the flood that follows it. The
// table stays bounded however many names clients ever had: per reason,
// only the MaxAuditClients clients refused most recently keep rows. With
// the two reasons audited (stale-token, token-rejected), that is at most
// 2 × 256 × (1,000 + 10 × 168) = 1,372,160 rows.
//
// These numbers are fencegw.trim_rejections' (sql/trim_rejections.sql),
// which holds them so that the gateway's role, which may only insert into
// the audit, cannot choose how much of it is deleted; they are named here
// for the tests and the docs.
const (
	MaxRejections       = 1000
	FirstRejectionsKept = 10
	FirstsKeptFor       = 7 * 24 * time.Hour
	MaxAuditClients     = 256
)

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

// RunJanitor deletes idempotency keys and the SQL front's transaction
// keys older than retention, and trims the
// rejection audit (see MaxRejections) and the lock history (MaxHistory),
// once a minute, until ctx ends.
// Several replicas may run it; the deletes are idempotent.
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

// Sweep is one round of RunJanitor. The audit and the history are
// trimmed by functions that hold their retention (sql/trim_rejections.sql,
// sql/trim_history.sql): the gateway's role may only insert into them.
func (s *Store) Sweep(ctx context.Context, retention time.Duration, log *slog.Logger) {
	if _, err := s.pool.Exec(ctx, "DELETE FROM fencegw.idempotency_keys WHERE created_at < now() - $1::interval", retention); err != nil && ctx.Err() == nil {
		log.Warn("janitor: expiring idempotency keys failed", "error", err)
	}
	if _, err := s.pool.Exec(ctx, "DELETE FROM fencegw.transaction_keys WHERE at < now() - $1::interval", retention); err != nil && ctx.Err() == nil {
		log.Warn("janitor: expiring the SQL front's transaction keys failed", "error", err)
	}
	if _, err := s.pool.Exec(ctx, "SELECT fencegw.trim_rejections()"); err != nil && ctx.Err() == nil {
		log.Warn("janitor: trimming rejections failed", "error", err)
	}
	if _, err := s.pool.Exec(ctx, "SELECT fencegw.trim_history()"); err != nil && ctx.Err() == nil {
		log.Warn("janitor: trimming the lock history failed", "error", err)
	}
}

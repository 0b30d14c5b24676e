// Keyed claim and settle: an idempotency key is applied at most once, and
// its first final answer is every attempt's answer. A keyed request claims
// its key inside its transaction (claimSQL, queued before its pipeline), a
// key that completed is answered with its stored response once the
// transaction is over (answerReplays), an applied request's answer is
// stored with the COMMIT (storeSQL), and a refusal decided outside the
// transaction becomes the key's outcome only after any attempt in flight
// with it has ended (Settle).

package fence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// claimSQL reserves a request's idempotency key for the transaction, or
// raises FG208 (completed: replay it) or FG422 (another request's key);
// see sql/claim_key.sql.
const claimSQL = "SELECT fencegw.claim_key($1, $2, $3, $4, $5)"

// storeSQL stores a keyed request's answer, in its transaction.
const storeSQL = "UPDATE fencegw.idempotency_keys SET status = $4, response = $5 WHERE (client, operation, key) = ($1, $2, $3)"

// answerReplays answers the requests whose key completed earlier with the
// stored response. It reads on conn when it can: with the pool exhausted,
// waiting for a second connection would stall every other request.
func (s *Store) answerReplays(ctx context.Context, conn *pgxpool.Conn, reqs []*pending) {
	for _, p := range reqs {
		if !p.replay {
			continue
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		p.resp, p.err = s.replayOn(rctx, conn, p.req.IdempotencyKey)
		cancel()
	}
}

// replayOn is storedResponse on conn if it is usable, else on a
// connection of the pool's.
func (s *Store) replayOn(ctx context.Context, conn *pgxpool.Conn, k *IdempotencyKey) (Response, error) {
	if conn == nil || !usable(conn) {
		c, err := s.acquire(ctx)
		if err != nil {
			return Response{}, fmt.Errorf("%w (%w): reading the stored response of key %q: %w", ErrUnavailable, ErrOutcomeUnknown, k.Value, err)
		}
		defer c.Release()
		conn = c
	}
	return s.storedResponse(ctx, conn, k)
}

// storedResponse reads the answer stored for a completed key, on conn, and
// replays it only once it is as durable as an acknowledged commit. The
// key's commit may have been answered with a warning (its wait for the
// synchronous standby cancelled: committed on this server alone, which a
// failover loses), and was then answered unknown; a retry reads its answer
// all the same. So the read is a transaction that commits after the key's
// and waits for the standby as far as its own commit, the key's and
// further: it locks the key's row (FOR KEY SHARE), which writes WAL, and a
// transaction waits for the standby only if it wrote some. A warning on
// that commit, as on any, leaves the outcome unknown.
func (s *Store) storedResponse(ctx context.Context, conn *pgxpool.Conn, k *IdempotencyKey) (Response, error) {
	r := Response{Replayed: true}
	pc := conn.Conn().PgConn()
	before := heard(pc)
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, "SELECT status, response FROM fencegw.idempotency_keys WHERE (client, operation, key) = ($1, $2, $3) FOR KEY SHARE",
			k.Client, k.Scope, k.Value).Scan(&r.Status, &r.Body)
	})
	if err == nil {
		err = s.warnedSince(pc, before)
	}
	if err != nil {
		// The request was applied earlier; only its answer, or that it
		// lasts, is out of reach.
		return Response{}, fmt.Errorf("%w (%w): reading the stored response of key %q: %w", ErrUnavailable, ErrOutcomeUnknown, k.Value, err)
	}
	return r, nil
}

// settleSQL waits for an attempt in flight with the key and stores a
// refusal as the key's outcome, or returns the key's earlier one
// (sql/settle_key.sql).
const settleSQL = "SELECT replayed, status, response FROM fencegw.settle_key($1, $2, $3, $4, $5, $6, $7)"

// Settle decides the answer to a keyed request that was refused before it
// could commit. An earlier attempt with the same key may still be on its
// way (holding the key in an open transaction, or not even there yet:
// waiting for a connection, queued behind a busy resource), so a refusal
// is only final once it is the key's outcome. Settle waits for an attempt
// that holds the key, then stores refusal as the key's response, unless
// the key already has one, which it returns (Replayed) instead. With
// refusal nil it only waits and returns the key's response, if any (ok
// false if none). ctx bounds the wait.
func (s *Store) Settle(ctx context.Context, k *IdempotencyKey, refusal *Response) (r Response, ok bool, err error) {
	var status *int
	var body []byte
	if refusal != nil {
		status, body = &refusal.Status, refusal.Body
	}
	conn, err := s.acquire(ctx)
	if err != nil {
		return Response{}, false, fmt.Errorf("%w (%w): settling key %q: %w", ErrUnavailable, ErrOutcomeUnknown, k.Value, err)
	}
	defer conn.Release()
	// A refusal stored by a commit PostgreSQL warned about may not last:
	// a retry with the key could then run afresh, so this one is unknown.
	pc := conn.Conn().PgConn()
	before := heard(pc)
	err = conn.QueryRow(ctx, settleSQL, k.Client, k.Scope, k.Value, k.Fingerprint[:], k.Retention, status, body).
		Scan(&r.Replayed, &r.Status, &r.Body)
	if err == nil || errors.Is(err, pgx.ErrNoRows) {
		if werr := s.warnedSince(pc, before); werr != nil {
			return Response{}, false, fmt.Errorf("settling key %q: %w", k.Value, werr)
		}
	}
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Response{}, false, nil
	case errors.As(err, &pgErr) && pgErr.Code == sqlstateMismatch:
		return Response{}, false, &KeyMismatchError{Key: k.Value}
	case err != nil:
		return Response{}, false, fmt.Errorf("%w (%w): settling key %q: %w", ErrUnavailable, ErrOutcomeUnknown, k.Value, err)
	}
	return r, true, nil
}

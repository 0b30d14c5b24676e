package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// IdempotencyHeader carries a client-chosen key that makes a write execute
// at most once (IETF httpapi Idempotency-Key draft).
const (
	IdempotencyHeader = "Idempotency-Key"
	ReplayedHeader    = "Idempotent-Replayed"
	maxKeyLen         = 255
)

// DefaultIdempotencyRetention is how long a completed key is replayed.
const DefaultIdempotencyRetention = 24 * time.Hour

// claimSQL reserves an idempotency key for the transaction (migration 0002).
const claimSQL = "SELECT fencegw.claim_key($1, $2, $3, $4, $5)"

// SQLSTATEs raised by fencegw.claim_key.
const (
	sqlstateReplay   = "FG208"
	sqlstateMismatch = "FG422"
)

// IdempotencyMismatchError is a key reused for a different request.
type IdempotencyMismatchError struct{ Key string }

func (e *IdempotencyMismatchError) Error() string {
	return fmt.Sprintf("gateway: idempotency key %q was first used with different arguments", e.Key)
}

// Idempotency scopes a key to a client and an operation, with the request's
// fingerprint and how long completed keys are kept.
type Idempotency struct {
	Client      string
	Key         string
	Fingerprint [32]byte
	Retention   time.Duration
}

// Reply is the answer to an idempotent write: new, or replayed from the
// first execution.
type Reply struct {
	Status   int
	Body     []byte
	Replayed bool
}

// ExecuteOnce applies w at most once per key. The key is claimed, the fence
// advanced and the operation run in one pipelined batch inside an explicit
// transaction; the rendered response is stored and committed in a second
// round trip, so the write and its stored response commit together. A
// concurrent request with the same key waits for the first to finish and
// then gets its response. ctx bounds the whole exchange.
func (e *Executor) ExecuteOnce(ctx context.Context, w Write, idem Idempotency, render func(Result) ([]byte, error)) (Reply, error) {
	conn, err := e.acquire(ctx)
	if err != nil {
		return Reply{}, err
	}
	defer conn.Release()
	return e.executeOnceOn(ctx, conn, w, idem, render)
}

// executeOnceOn is ExecuteOnce on a connection the caller holds.
func (e *Executor) executeOnceOn(ctx context.Context, conn *pgxpool.Conn, w Write, idem Idempotency, render func(Result) ([]byte, error)) (Reply, error) {
	if !usable(conn) {
		return Reply{}, errNotUsable
	}
	op := w.Operation
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(claimSQL, idem.Client, op.Name, idem.Key, idem.Fingerprint[:], idem.Retention)
	e.queueWrite(b, w)
	br := conn.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		_, err = br.Exec()
	}
	res := Result{Operation: op.Name, Resource: w.Resource, Token: w.Token}
	if err == nil {
		err = readWrite(br, op, &res)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		rollback(conn)
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == sqlstateReplay:
			return replay(ctx, conn, idem, op.Name)
		case errors.As(err, &pgErr) && pgErr.Code == sqlstateMismatch:
			return Reply{}, &IdempotencyMismatchError{Key: idem.Key}
		}
		return Reply{}, classify(err, w)
	}

	body, err := render(res)
	if err != nil {
		rollback(conn)
		return Reply{}, err
	}
	b = &pgx.Batch{}
	b.Queue("UPDATE fencegw.idempotency_keys SET status = $4, response = $5 WHERE (client, operation, key) = ($1, $2, $3)",
		idem.Client, op.Name, idem.Key, http.StatusOK, body)
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		rollback(conn)
		return Reply{}, classify(err, w)
	}
	return Reply{Status: http.StatusOK, Body: body}, nil
}

// settleSQL waits for an attempt in flight with the key and stores a
// refusal as the key's outcome, or returns the key's earlier one
// (migration 0004).
const settleSQL = "SELECT replayed, status, response FROM fencegw.settle_key($1, $2, $3, $4, $5, $6, $7)"

// Settle decides the answer to a keyed request that was refused before it
// could commit. An earlier attempt with the same key may still be on its
// way, so a refusal is only final once it is the key's outcome: Settle
// waits for an attempt that holds the key, then stores refusal as the
// key's response, unless the key already has one, which it returns
// (replayed) instead. With refusal nil it only waits and returns the
// key's response, if any (ok false if none). ctx bounds the wait.
func (e *Executor) Settle(ctx context.Context, op string, idem Idempotency, refusal *Reply) (r Reply, ok bool, err error) {
	var status *int
	var body []byte
	if refusal != nil {
		status, body = &refusal.Status, refusal.Body
	}
	err = e.pool.QueryRow(ctx, settleSQL, idem.Client, op, idem.Key, idem.Fingerprint[:], idem.Retention, status, body).
		Scan(&r.Replayed, &r.Status, &r.Body)
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Reply{}, false, nil
	case errors.As(err, &pgErr) && pgErr.Code == sqlstateMismatch:
		return Reply{}, false, &IdempotencyMismatchError{Key: idem.Key}
	case err != nil:
		return Reply{}, false, fmt.Errorf("%w (%w): settling key %q: %w", ErrUnavailable, ErrOutcomeUnknown, idem.Key, err)
	}
	return r, true, nil
}

// replay answers with the stored response of the key's first execution.
func replay(ctx context.Context, conn querier, idem Idempotency, op string) (Reply, error) {
	r := Reply{Replayed: true}
	err := conn.QueryRow(ctx, "SELECT status, response FROM fencegw.idempotency_keys WHERE (client, operation, key) = ($1, $2, $3)",
		idem.Client, op, idem.Key).Scan(&r.Status, &r.Body)
	if err != nil {
		// The write was applied earlier; only its answer is out of reach.
		return Reply{}, fmt.Errorf("%w (%w): reading the stored response of key %q: %w", ErrUnavailable, ErrOutcomeUnknown, idem.Key, err)
	}
	return r, nil
}

// rollback ends a failed explicit transaction. If it cannot, the pool
// discards the connection on release, which rolls back too.
func rollback(conn *pgxpool.Conn) {
	if conn.Conn().PgConn().TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = conn.Exec(ctx, "ROLLBACK")
}

// idempotencyKey reads the optional Idempotency-Key header: an RFC 8941
// string ("…"), or for convenience the bare text, of printable ASCII.
func idempotencyKey(r *http.Request) (string, bool, error) {
	values := r.Header.Values(IdempotencyHeader)
	switch len(values) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", false, badRequest("%d %s headers: send exactly one", len(values), IdempotencyHeader)
	}
	k := values[0]
	if len(k) >= 2 && k[0] == '"' && k[len(k)-1] == '"' {
		k = k[1 : len(k)-1]
	}
	if k == "" || len(k) > maxKeyLen {
		return "", false, badRequest("%s must be 1 to %d characters", IdempotencyHeader, maxKeyLen)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e || k[i] == '"' || k[i] == '\\' {
			return "", false, badRequest("%s must be printable ASCII without quotes or backslashes", IdempotencyHeader)
		}
	}
	return k, true, nil
}

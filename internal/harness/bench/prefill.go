package bench

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// State is what the run found in the gateway's tables after pre-filling
// them (Config.FenceRows, Config.IdempotencyRows): the growth curve's
// x-axis, what state the writes ran beside.
type State struct {
	FenceRows        int64 `json:"fence_rows"`
	FenceBytes       int64 `json:"fence_bytes"`
	IdempotencyRows  int64 `json:"idempotency_rows"`
	IdempotencyBytes int64 `json:"idempotency_bytes"`
}

// Pre-filled rows are apart from the workload's: resources and a client
// no write of the run uses, so they only make the tables and their
// indexes bigger, as the resources of past work do.
const (
	prefillResource = "bench-prefill/"
	prefillClient   = "bench-prefill"
	// prefillChunk rows per INSERT: a transaction of ten million rows
	// would hold its WAL and locks for minutes.
	prefillChunk = 200_000
)

// prefill tops fencegw.fences up to fenceRows pre-filled rows and
// fencegw.idempotency_keys up to idempotencyRows (0: leaves them as they
// are), then measures both tables. Rows from an earlier run are kept, so a
// curve's points can grow one database.
func prefill(ctx context.Context, dbURL string, fenceRows, idempotencyRows int64) (State, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return State{}, fmt.Errorf("bench: pre-fill: %w", err)
	}
	defer conn.Close(context.Background())
	fill := func(table, countSQL, insertSQL string, want int64) error {
		var have int64
		if err := conn.QueryRow(ctx, countSQL).Scan(&have); err != nil {
			return fmt.Errorf("bench: pre-fill %s: %w", table, err)
		}
		for from := have + 1; from <= want; from += prefillChunk {
			to := min(from+prefillChunk-1, want)
			if _, err := conn.Exec(ctx, insertSQL, from, to); err != nil {
				return fmt.Errorf("bench: pre-fill %s: %w", table, err)
			}
		}
		return nil
	}
	if fenceRows > 0 {
		err := fill("fencegw.fences",
			"SELECT count(*) FROM fencegw.fences WHERE resource LIKE '"+prefillResource+"%'",
			`INSERT INTO fencegw.fences (resource, epoch, revision)
			 SELECT '`+prefillResource+`' || lpad(i::text, 10, '0'), 1, i FROM generate_series($1::bigint, $2::bigint) i
			 ON CONFLICT DO NOTHING`, fenceRows)
		if err != nil {
			return State{}, err
		}
	}
	if idempotencyRows > 0 {
		// A stored answer the size of the bench operation's.
		err := fill("fencegw.idempotency_keys",
			"SELECT count(*) FROM fencegw.idempotency_keys WHERE client = '"+prefillClient+"'",
			`INSERT INTO fencegw.idempotency_keys (client, operation, key, fingerprint, status, response)
			 SELECT '`+prefillClient+`', 'add', 'key-' || i, sha256(i::text::bytea), 200,
			        convert_to('{"operation":"add","resource":"bench/' || i || '","token":"1:' || i || '","statements":[{"rows_affected":1}]}', 'UTF8')
			   FROM generate_series($1::bigint, $2::bigint) i
			 ON CONFLICT DO NOTHING`, idempotencyRows)
		if err != nil {
			return State{}, err
		}
	}
	var s State
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM fencegw.fences), pg_total_relation_size('fencegw.fences'),
		(SELECT count(*) FROM fencegw.idempotency_keys), pg_total_relation_size('fencegw.idempotency_keys')`).
		Scan(&s.FenceRows, &s.FenceBytes, &s.IdempotencyRows, &s.IdempotencyBytes)
	if err != nil {
		return State{}, fmt.Errorf("bench: measuring the state: %w", err)
	}
	// Fresh rows have no statistics yet: the planner would guess.
	if fenceRows > 0 || idempotencyRows > 0 {
		if _, err := conn.Exec(ctx, "ANALYZE fencegw.fences, fencegw.idempotency_keys"); err != nil {
			return State{}, fmt.Errorf("bench: pre-fill: %w", err)
		}
	}
	return s, nil
}

package fence_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestJanitorExpiresKeysAndTrimsAudit: keys past their retention go, fresh
// ones stay; the rejection audit keeps only its newest rows of each reason
// (and the first of the hour).
func TestJanitorExpiresKeysAndTrimsAudit(t *testing.T) {
	h := newDB(t)
	_, err := h.pool.Exec(t.Context(), `
		INSERT INTO fencegw.idempotency_keys (client, operation, key, fingerprint, status, response, created_at)
		VALUES ('', 'debit', 'old', '\x00', 200, '{}', now() - interval '25 hours'),
		       ('', 'debit', 'new', '\x00', 200, '{}', now())`)
	if err != nil {
		t.Fatal(err)
	}
	// The evidence of one stale write, then a flood of forged tokens.
	err = h.store.RecordRejections(t.Context(), []fence.Rejection{{Resource: "r", Operation: "debit", Reason: "stale-token", Presented: "1:2", Current: "1:3"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.pool.Exec(t.Context(), `INSERT INTO fencegw.rejections (resource, operation, reason)
		SELECT 'r', 'debit', 'token-rejected' FROM generate_series(1, $1 + 50)`, fence.MaxRejections)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.store.RunJanitor(ctx, 24*time.Hour, slog.New(slog.DiscardHandler)) }()
	defer func() { cancel(); <-done }()

	var keys, audit int
	swept := testenv.WaitFor(10*time.Second, func() bool {
		err := h.pool.QueryRow(t.Context(), "SELECT (SELECT count(*) FROM fencegw.idempotency_keys), (SELECT count(*) FROM fencegw.rejections)").Scan(&keys, &audit)
		return err == nil && keys == 1 && audit == fence.MaxRejections+fence.FirstRejectionsKept+1
	})
	if !swept {
		t.Fatalf("after the janitor: %d keys, %d rejections; want 1 and %d", keys, audit, fence.MaxRejections+fence.FirstRejectionsKept+1)
	}
	var stale int
	if err := h.pool.QueryRow(t.Context(), "SELECT count(*) FROM fencegw.rejections WHERE reason = 'stale-token' AND presented = '1:2'").Scan(&stale); err != nil || stale != 1 {
		t.Fatalf("the stale write's evidence: %d rows, %v; a flood of another reason must not push it out", stale, err)
	}
	var left string
	if err := h.pool.QueryRow(t.Context(), "SELECT key FROM fencegw.idempotency_keys").Scan(&left); err != nil || left != "new" {
		t.Fatalf("kept key %q, %v; want new", left, err)
	}
}

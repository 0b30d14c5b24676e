package schema_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// writer applies the demo policy's writes through package fence.
type writer struct {
	t     *testing.T
	pol   *policy.Policy
	store *fence.Store
}

func newWriter(t *testing.T, dbURL string) *writer {
	t.Helper()
	pol, err := policy.Load("../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := fence.NewPool(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	store, err := fence.New(fence.Config{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	return &writer{t: t, pol: pol, store: store}
}

// apply applies one write of op with the JSON arguments args, one token
// per resource (revisions of epoch 1).
func (w *writer) apply(key *fence.IdempotencyKey, op, args string, revisions ...int64) (fence.Response, error) {
	w.t.Helper()
	o := w.pol.Operations[op]
	decoded, err := o.DecodeArgs([]byte(args))
	if err != nil {
		w.t.Fatal(err)
	}
	keys, err := o.Resources(nil, decoded)
	if err != nil {
		w.t.Fatal(err)
	}
	var toks []tokens.Token
	for _, r := range revisions {
		toks = append(toks, tokens.Token{Epoch: 1, Revision: r})
	}
	req, err := fence.NewRequest([]fence.Write{{Operation: o, Args: decoded, Resources: keys, Tokens: toks}}, key)
	if err != nil {
		w.t.Fatal(err)
	}
	return w.store.Apply(context.Background(), req)
}

// checkFencedWrites writes through package fence on a database with the
// demo application, guarded, so that every function runs: a transfer (two
// fences, guard_row letting its rows through), a stale token refused
// (fence), an overdraft refused (expect_rows), a keyed write replayed
// (claim_key), a keyed refusal made its key's outcome (settle_key), and a
// TRUNCATE refused (guard_truncate) but after a bypass (bypass, bypassed).
func checkFencedWrites(t *testing.T, dbURL string, conn *pgx.Conn) {
	t.Helper()
	w := newWriter(t, dbURL)
	if _, err := w.apply(nil, "transfer", `{"from": "acct-1", "to": "acct-2", "amount_cents": 100}`, 5, 5); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	var stale *fence.StaleTokenError
	if _, err := w.apply(nil, "debit", `{"account": "acct-1", "amount_cents": 1}`, 4); !errors.As(err, &stale) {
		t.Fatalf("debit with a stale token: %v, want a stale token refused", err)
	}
	var precondition *fence.PreconditionError
	if _, err := w.apply(nil, "debit", `{"account": "acct-1", "amount_cents": 5000}`, 6); !errors.As(err, &precondition) {
		t.Fatalf("overdraft: %v, want a failed precondition", err)
	}
	key := &fence.IdempotencyKey{Client: "c", Scope: "credit", Value: "k1", Fingerprint: [32]byte{1}, Retention: time.Hour}
	for i, replayed := range []bool{false, true} {
		r, err := w.apply(key, "credit", `{"account": "acct-3", "amount_cents": 10}`, 7)
		if err != nil || r.Replayed != replayed {
			t.Fatalf("keyed credit #%d: %+v, %v; want replayed %t", i+1, r, err, replayed)
		}
	}
	refused := &fence.IdempotencyKey{Client: "c", Scope: "debit", Value: "k2", Fingerprint: [32]byte{2}, Retention: time.Hour}
	if r, ok, err := w.store.Settle(context.Background(), refused, &fence.Response{Status: 409, Body: []byte("stale")}); err != nil || !ok || r.Replayed {
		t.Fatalf("Settle: %+v %t %v; want the refusal stored", r, ok, err)
	}
	if r, err := w.apply(refused, "debit", `{"account": "acct-3", "amount_cents": 1}`, 8); err != nil || !r.Replayed || r.Status != 409 {
		t.Fatalf("the settled key again: %+v, %v; want its refusal replayed", r, err)
	}
	var balances string
	err := conn.QueryRow(t.Context(), "SELECT string_agg(balance_cents::text, ' ' ORDER BY id) FROM demo.accounts WHERE id IN ('acct-1', 'acct-2', 'acct-3')").Scan(&balances)
	if err != nil || balances != "900 1100 1010" {
		t.Fatalf("balances of acct-1, -2, -3: %q, %v; want 900 1100 1010", balances, err)
	}
	checkTruncateGuarded(t, conn)
}

// checkTruncateGuarded: TRUNCATE of a guarded table is refused, unless the
// transaction declared a bypass; the bypass is rolled back here.
func checkTruncateGuarded(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	ctx := t.Context()
	if _, err := conn.Exec(ctx, "TRUNCATE demo.write_log"); err == nil || !strings.Contains(err.Error(), "FG403") {
		t.Fatalf("TRUNCATE of a guarded table: %v, want refused (FG403)", err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, sql := range []string{"SELECT fencegw.bypass('upgrade test')", "TRUNCATE demo.write_log"} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatal(fmt.Errorf("under a bypass: %s: %w", sql, err))
		}
	}
}

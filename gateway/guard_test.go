package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/guard"
	"github.com/fencegw/fencegw/policy"
)

// installGuard puts the guard triggers of h's policy on its database.
func installGuard(t *testing.T, h *harness) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, h.pool.Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	pol, err := policy.Parse("p.yaml", []byte(h.policy))
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Guarded) == 0 {
		t.Fatal("the policy guards no table")
	}
	if err := guard.Install(ctx, conn, pol); err != nil {
		t.Fatal(err)
	}
}

// misroutedPolicy adds an operation that is fenced on one account and
// writes another: a policy mistake the guard triggers catch.
const misroutedOperation = `
  credit_other:
    resource: account
    args:
      account: {type: string, max_length: 64, pattern: "acct-[0-9]+"}
      other: {type: string, max_length: 64, pattern: "acct-[0-9]+"}
    statements:
      - sql: UPDATE demo.accounts SET balance_cents = balance_cents + 1 WHERE id = :other
        expect_rows: 1
`

// TestWritesOnGuardedTables: with the guard installed, the gateway's own
// writes go through (plain, keyed, inserting), a write the policy routes
// to another account's row is refused with nothing written, and a direct
// write is refused by PostgreSQL.
func TestWritesOnGuardedTables(t *testing.T) {
	pol := strings.Replace(demoPolicy(t, "monotonic"), "\noperations:\n", "\noperations:"+misroutedOperation, 1)
	h := newHarness(t, pol)
	installGuard(t, h)
	const account = "acct-45"
	l := h.mustAcquire("account/"+account, 30, 0)
	before := h.balance(account)

	if r := h.write("credit", l.Token, debit(account, 5)); r.Status != http.StatusOK {
		t.Fatalf("credit: %d %s", r.Status, r.Body)
	}
	if r := h.do(http.MethodPost, "/v1/ops/credit", keyed(l.Token, "guarded-1"), debit(account, 7)); r.Status != http.StatusOK {
		t.Fatalf("keyed credit: %d %s", r.Status, r.Body)
	}
	opened := h.mustAcquire("account/acct-4500", 30, 0)
	if r := h.write("open_account", opened.Token, `{"account": "acct-4500"}`); r.Status != http.StatusOK {
		t.Fatalf("open_account: %d %s", r.Status, r.Body)
	}

	other := h.balance("acct-46")
	r := h.write("credit_other", l.Token, `{"account": "`+account+`", "other": "acct-46"}`)
	if r.Status != http.StatusConflict || r.Problem.Kind() != "constraint" || !strings.Contains(r.Problem.Detail, "account/acct-46") {
		t.Fatalf("a write fenced on %s touching acct-46: %d %s, want 409 constraint naming the row's resource", account, r.Status, r.Body)
	}
	if got := h.balance("acct-46"); got != other {
		t.Fatalf("acct-46 balance %d, want %d", got, other)
	}
	if got := h.balance(account); got != before+12 {
		t.Fatalf("%s balance %d, want %d", account, got, before+12)
	}

	_, err := h.pool.Exec(context.Background(), "UPDATE demo.accounts SET balance_cents = 0 WHERE id = $1", account)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "FG403" {
		t.Fatalf("a direct write: %v, want SQLSTATE FG403", err)
	}
}

// TestMisroutedWriteInACoalescedBatch: writes queued behind a busy
// resource run as one transaction, each in its own savepoint; the one the
// guard refuses is answered 409 and the others commit.
func TestMisroutedWriteInACoalescedBatch(t *testing.T) {
	pol := strings.Replace(demoPolicy(t, "monotonic"), "\noperations:\n", "\noperations:"+misroutedOperation, 1)
	h := newHarness(t, pol)
	installGuard(t, h)
	const account, resource = "acct-47", "account/acct-47"
	l := h.mustAcquire(resource, 30, 0)
	defer h.release(l)                                                                 // etcd is shared by the package's tests
	if r := h.write("credit", l.Token, debit(account, 1)); r.Status != http.StatusOK { // creates the fence row
		t.Fatalf("first credit: %d %s", r.Status, r.Body)
	}
	before, other := h.balance(account), h.balance("acct-48")

	unblock := blockFence(t, h, resource)
	results := make(chan response, 4)
	send := func(op, body string) { results <- h.write(op, l.Token, body) }
	go send("credit", debit(account, 10)) // runs first, and waits for the fence row
	waitUntilBlocked(t, h)
	go send("credit", debit(account, 20))
	go send("credit_other", `{"account": "`+account+`", "other": "acct-48"}`)
	go send("credit", debit(account, 30))
	waitOrFail(t, "three writes to queue behind the blocked one", func() bool { return gateway.QueuedWrites(h.gw, resource) == 3 })
	unblock()

	var ok, refusedByGuard int
	for range 4 {
		switch r := <-results; {
		case r.Status == http.StatusOK:
			ok++
		case r.Status == http.StatusConflict && r.Problem.Kind() == "constraint":
			refusedByGuard++
		default:
			t.Errorf("unexpected answer: %d %s", r.Status, r.Body)
		}
	}
	if ok != 3 || refusedByGuard != 1 {
		t.Fatalf("%d applied, %d refused by the guard; want 3 and 1", ok, refusedByGuard)
	}
	if got := h.balance(account); got != before+60 {
		t.Errorf("%s balance %d, want %d", account, got, before+60)
	}
	if got := h.balance("acct-48"); got != other {
		t.Errorf("acct-48 balance %d, want %d: the misrouted write must not land", got, other)
	}
}

package sqlfront_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// committedKey asks, on conn, whether the client's transaction named key
// committed.
func committedKey(t *testing.T, conn *pgx.Conn, key string) bool {
	t.Helper()
	var ok bool
	if err := conn.QueryRow(context.Background(), "SELECT fencegw.transaction_committed($1)", key).Scan(&ok); err != nil {
		t.Fatalf("fencegw.transaction_committed(%q): %v", key, err)
	}
	return ok
}

// TestTransactionKeys: a transaction of the front names itself with
// fencegw.transaction_key; fencegw.transaction_committed, asked on
// another session, says whether it committed (yes for a commit, no for a
// rollback or a key never used, no under another client's name); a
// retry under a committed transaction's key is refused (FG208) and
// writes nothing; a session that is not the front's names nothing.
func TestTransactionKeys(t *testing.T) {
	f := newFront(t)
	ctx := context.Background()
	const account, resource = "acct-39", "account/acct-39"
	l := f.lease(billing, resource, 60, 0)
	set := "SET LOCAL fencegw.tokens = '" + resource + "=" + l.Token + "'"
	write := strings.Replace(debit, "%s", account, 1)
	conn := f.connect(billing)
	if err := tryTx(t, conn, set, "SELECT fencegw.transaction_key('k1')", write); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT fencegw.transaction_key('k2')"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	other := f.connect(billing)
	for key, want := range map[string]bool{"k1": true, "k2": false, "k3": false} {
		if got := committedKey(t, other, key); got != want {
			t.Errorf("transaction %s committed: %t, want %t", key, got, want)
		}
	}
	if committedKey(t, f.connect(ledger), "k1") {
		t.Error("another client sees billing's key")
	}
	before := f.state(account)
	if err := tryTx(t, conn, set, "SELECT fencegw.transaction_key('k1')", write); sqlState(err) != "FG208" {
		t.Fatalf("a retry under a committed transaction's key: %v, want FG208", err)
	}
	if after := f.state(account); after != before {
		t.Fatalf("%s, was %s", after, before)
	}
	u, err := url.Parse(f.gw.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(f.role)
	direct, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(ctx)
	if _, err := direct.Exec(ctx, "SELECT fencegw.transaction_key('k4')"); sqlState(err) != "42501" {
		t.Fatalf("a direct session naming its transaction: %v, want 42501", err)
	}
}

package sqlfront_test

import (
	"context"
	"testing"
)

// TestAFencedTransaction: a client of the front runs as its sql_role;
// a transaction names its fence with set_config (extended protocol) or
// SET LOCAL (simple), writes the guarded tables as written, and commits.
// The token never reaches PostgreSQL as a setting the session can read.
func TestAFencedTransaction(t *testing.T) {
	f := newFront(t)
	ctx := context.Background()
	conn := f.connect(billing)
	var current, session string
	if err := conn.QueryRow(ctx, "SELECT current_user, session_user").Scan(&current, &session); err != nil {
		t.Fatal(err)
	}
	if current != f.role || session != f.role {
		t.Fatalf("the session runs as %s (session %s), want %s", current, session, f.role)
	}
	l := f.lease(billing, "account/acct-1", 30, 0)
	for i, name := range []string{"set_config", "SET LOCAL"} {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if name == "set_config" {
			var shown string
			if err := tx.QueryRow(ctx, "SELECT set_config('fencegw.tokens', $1, true)", "account/acct-1="+l.Token).Scan(&shown); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if want := "account/acct-1=" + unsigned(t, l.Token); shown != want {
				t.Errorf("set_config answered %q, want %q: the token without its signature", shown, want)
			}
		} else if _, err := tx.Exec(ctx, "SET LOCAL fencegw.tokens = 'account/acct-1="+l.Token+"'"); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var seen *string
		if err := tx.QueryRow(ctx, "SELECT current_setting('fencegw.' || 'tokens', true)").Scan(&seen); err != nil {
			t.Fatal(err)
		}
		if seen != nil && *seen != "" {
			t.Fatalf("%s: the session reads fencegw.tokens back: %q", name, *seen)
		}
		if _, err := tx.Exec(ctx, "UPDATE demo.accounts SET balance_cents = balance_cents - 100 WHERE id = 'acct-1'"); err != nil {
			t.Fatalf("%s: the fenced update: %v", name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO demo.write_log (resource, epoch, revision, operation, account, amount_cents) VALUES ('account/acct-1', 1, $1, 'sql', 'acct-1', -100)", i); err != nil {
			t.Fatalf("%s: the fenced insert: %v", name, err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatalf("%s: commit: %v", name, err)
		}
	}
	if got, want := f.state("acct-1"), "balance 800, log [1:0 sql -100, 1:1 sql -100]"; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
}

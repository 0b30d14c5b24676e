package sqlfront_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestFenceStatementKept: the front parses its fence statement once per
// backend and binds it in every transaction after; a DEALLOCATE or
// DISCARD it sees makes it parse the statement again, and one it cannot
// see (run by a function) fails only the next fence, nothing written,
// the one after it parsing the statement again. A client may not use the
// statement's name.
func TestFenceStatementKept(t *testing.T) {
	ctx := context.Background()
	f := newFront(t)
	const account, resource = "acct-91", "account/acct-91"
	l := f.lease(billing, resource, 30, 0)
	conn := f.connect(billing)
	// The front's own statements are the session's: the client sees them
	// in pg_prepared_statements, with how often each ran.
	kept := func() (n, runs int64) {
		t.Helper()
		err := conn.QueryRow(ctx, "SELECT count(*), coalesce(sum(generic_plans + custom_plans), 0) FROM pg_prepared_statements WHERE name = 'fencegw.fence_session'", pgx.QueryExecModeExec).Scan(&n, &runs)
		if err != nil {
			t.Fatal(err)
		}
		return n, runs
	}
	debit := func() error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			// Unnamed statements: pgx's cache of its own would not outlive
			// the DEALLOCATE below.
			if _, err := tx.Exec(ctx, "SET LOCAL fencegw.tokens = '"+resource+"="+l.Token+"'", pgx.QueryExecModeExec); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "UPDATE demo.accounts SET balance_cents = balance_cents - 1 WHERE id = $1", pgx.QueryExecModeExec, account)
			return err
		})
	}
	for range 3 {
		if err := debit(); err != nil {
			t.Fatal(err)
		}
	}
	if n, runs := kept(); n != 1 || runs != 3 {
		t.Fatalf("after three fenced transactions the kept fence statement is there %d times and ran %d times; want once, three", n, runs)
	}

	for _, drop := range []string{"DEALLOCATE ALL", "discard all"} {
		if _, err := conn.Exec(ctx, drop, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("%s: %v", drop, err)
		}
		if err := debit(); err != nil {
			t.Fatalf("a fenced transaction after %s: %v", drop, err)
		}
		if n, runs := kept(); n != 1 || runs != 1 {
			t.Fatalf("after %s and a fenced transaction: the statement there %d times, ran %d; want parsed again, once", drop, n, runs)
		}
	}

	// Unseen: the words are not in the text the front reads.
	if _, err := conn.Exec(ctx, `DO $$ BEGIN EXECUTE 'DEALL' || 'OCATE ALL'; END $$`, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	before := f.state(account)
	if err := debit(); sqlState(err) != "26000" {
		t.Fatalf("the fence after a deallocation the front did not see: %v, want 26000 (the statement is gone)", err)
	}
	if after := f.state(account); after != before {
		t.Fatalf("the failed fence's transaction wrote: %s, was %s", after, before)
	}
	if err := debit(); err != nil {
		t.Fatalf("the transaction after it: %v, want the statement parsed again", err)
	}

	for _, use := range []func() error{
		func() error { _, err := conn.Prepare(ctx, "fencegw.fence_session", "SELECT 1"); return err },
		func() error { _, err := conn.Prepare(ctx, "fencegw.mine", "SELECT 1"); return err },
		func() error { return conn.Deallocate(ctx, "fencegw.fence_session") },
	} {
		if err := use(); sqlState(err) != "42939" {
			t.Errorf("a client using the front's statement name: %v, want 42939", err)
		}
	}
	if err := debit(); err != nil {
		t.Fatalf("a fenced transaction after the refusals: %v", err)
	}
}

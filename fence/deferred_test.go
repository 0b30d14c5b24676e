package fence_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/fencegw/fencegw/fence"
)

// markOperation inserts a mark of account about target; a deferred
// constraint trigger of the application then credits target's guarded
// account row, at COMMIT.
const markOperation = `  mark:
    resource: account
    args:
      account: {type: string, max_length: 64, pattern: "acct-[0-9]+"}
      target: {type: string, max_length: 64, pattern: "acct-[0-9]+"}
    statements:
      - sql: INSERT INTO demo.marks (account, target) VALUES (:account, :target)
`

// newMarkDB is a database with the guard installed and markOperation's
// table and deferred trigger.
func newMarkDB(t *testing.T) *db {
	t.Helper()
	d := newDB(t, markOperation)
	d.installGuard()
	if _, err := d.pool.Exec(context.Background(), `CREATE TABLE demo.marks (account text NOT NULL, target text NOT NULL);
		CREATE FUNCTION demo.credit_target() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			UPDATE demo.accounts SET balance_cents = balance_cents + 1 WHERE id = NEW.target;
			RETURN NULL;
		END $$;
		CREATE CONSTRAINT TRIGGER credit_target AFTER INSERT ON demo.marks
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION demo.credit_target()`); err != nil {
		t.Fatal(err)
	}
	return d
}

func mark(d *db, account, target string, rev int64) fence.Write {
	return d.write("mark", fmt.Sprintf(`{"account": %q, "target": %q}`, account, target), tok(rev))
}

// refusedByGuard checks err is the guard's refusal.
func refusedByGuard(t *testing.T, what string, err error) {
	t.Helper()
	var c *fence.ConstraintError
	if !errors.As(err, &c) || c.Constraint != "fencegw_guard" {
		t.Fatalf("%s: %v, want the guard's refusal", what, err)
	}
}

// TestDeferredWorkIsJudgedUnderItsOwnFence is issue 23's case C: the guard
// judges a row by the fenced scope of the write running, and work deferred
// to COMMIT runs after the transaction's last write. Alone, a write fenced
// on acct-83 whose deferred trigger credits acct-84 is refused; grouped
// with a write fenced on acct-86, a write fenced on acct-85 committed its
// deferred credit of acct-86. The scope now ends before a group's COMMIT,
// so the group runs again with each write alone, under its own fence:
// the trespassing write is refused, the others apply, deferred work on a
// write's own resource included.
func TestDeferredWorkIsJudgedUnderItsOwnFence(t *testing.T) {
	d := newMarkDB(t)
	ctx := context.Background()
	if _, err := d.apply(nil, mark(d, "acct-83", "acct-83", 1)); err != nil {
		t.Fatalf("alone, deferred work on its own resource: %v", err)
	}
	before := d.state()
	_, err := d.apply(nil, mark(d, "acct-83", "acct-84", 1))
	refusedByGuard(t, "alone, deferred work on another resource", err)
	if after := d.state(); after != before {
		t.Fatalf("a refused write changed the database: %s -> %s", before, after)
	}

	gs := newGroupStore(t, d, 1, newCommitGate())
	group := func(writes ...fence.Write) []reply {
		release, first := occupy(t, d, gs, "acct-80")
		got := settled(t, release, first, inLine(t, gs, each(t, gs, writes...)...))
		groupedIn(t, gs, len(writes))
		return got
	}
	// Canonical order puts acct-86's credit last: its scope was the one
	// acct-85's deferred work met at COMMIT.
	got := group(mark(d, "acct-85", "acct-86", 1), credit(d, "acct-86", 1))
	refusedByGuard(t, "grouped, deferred work on another write's resource", got[0].err)
	if got[1].err != nil {
		t.Errorf("acct-86's credit: %v, want it applied", got[1].err)
	}
	for i, o := range group(mark(d, "acct-87", "acct-87", 1), credit(d, "acct-88", 1)) {
		if o.err != nil {
			t.Errorf("grouped write %d, deferred work on its own resource or none: %v, want it applied", i, o.err)
		}
	}
	want := map[string]int64{"acct-85": 1000, "acct-86": 1001, "acct-87": 1001, "acct-88": 1001}
	for account, balance := range want {
		if b := d.balance(account); b != balance {
			t.Errorf("%s = %d, want %d", account, b, balance)
		}
	}
	var marks int
	if err := d.pool.QueryRow(ctx, "SELECT count(*) FROM demo.marks WHERE account = 'acct-85'").Scan(&marks); err != nil || marks != 0 {
		t.Errorf("acct-85's refused mark: %d rows (%v), want none", marks, err)
	}
}

// TestABatchsDeferredWorkIsJudgedUnderItsFences: a batch is one client's
// request, all of whose tokens it holds: work deferred to its COMMIT is
// judged under every fence of the batch (it was the last write's alone),
// and still not under a resource outside it.
func TestABatchsDeferredWorkIsJudgedUnderItsFences(t *testing.T) {
	d := newMarkDB(t)
	if _, err := d.apply(nil, mark(d, "acct-83", "acct-83", 1), credit(d, "acct-84", 1)); err != nil {
		t.Fatalf("a batch whose first write's deferred work is on its own resource: %v", err)
	}
	if b := d.balance("acct-83"); b != 1001 {
		t.Fatalf("acct-83 = %d, want 1001", b)
	}
	before := d.state()
	_, err := d.apply(nil, mark(d, "acct-83", "acct-89", 1), credit(d, "acct-84", 1))
	refusedByGuard(t, "a batch whose deferred work is outside its fences", err)
	if after := d.state(); after != before {
		t.Fatalf("a refused batch changed the database: %s -> %s", before, after)
	}
}

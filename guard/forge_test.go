package guard_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/guard"
)

// TestTheMarkCannotBeForged: a role that may read and write the guarded
// tables (every privilege but TRIGGER, which TestForeignTriggersAreFlagged
// covers) and holds no gateway privileges cannot write a guarded row by
// any means short of ownership or superuser: not directly, not by
// claiming a fenced resource, not by advancing or stamping a fence
// itself, not through a bypass, not by turning the triggers off. Nothing
// it tried changed a row.
func TestTheMarkCannotBeForged(t *testing.T) {
	conn, pol := demo(t)
	ctx := context.Background()
	if err := guard.Install(ctx, conn, pol); err != nil {
		t.Fatal(err)
	}
	role := intruder(t, conn)
	exec(t, conn, "GRANT USAGE ON SCHEMA demo TO "+role)
	exec(t, conn, "GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES ON ALL TABLES IN SCHEMA demo TO "+role)
	exec(t, conn, "GRANT ALL ON ALL SEQUENCES IN SCHEMA demo TO "+role)
	// Seeing the gateway's schema must not help either.
	exec(t, conn, "GRANT USAGE ON SCHEMA fencegw TO "+role)
	before := balance(t, conn, "acct-1")

	const write = "UPDATE demo.accounts SET balance_cents = balance_cents + 1000 WHERE id = 'acct-1'"
	as := "SET LOCAL ROLE " + role
	for _, tc := range []struct{ name, setup, sql, want string }{
		{"a direct write", as, write, "FG403"},
		{"claiming the row's resource", as + "; SELECT set_config('fencegw.resource', 'account/acct-1', true)", write, "FG403"},
		{"advancing the fence itself", as, "SELECT fencegw.fence('account/acct-1', 1, 9000000000, false)", "42501"},
		{"stamping the fence row", as, "UPDATE fencegw.fences SET xact = pg_current_xact_id(), updated_at = now()", "42501"},
		{"inserting a fence row", as, "INSERT INTO fencegw.fences (resource, epoch, revision, xact) VALUES ('account/acct-1', 1, 1, pg_current_xact_id())", "42501"},
		{"the control runs' stamp", as, "SELECT fencegw.stamp_unfenced('account/acct-1', 1, 1, true)", "42501"},
		{"a bypass", as, "SELECT fencegw.bypass('just this once')", "42501"},
		{"disabling the trigger", as, "ALTER TABLE demo.accounts DISABLE TRIGGER fencegw_guard", "42501"},
		{"dropping the trigger", as, "DROP TRIGGER fencegw_guard ON demo.accounts", "42501"},
		{"replica mode", as, "SET LOCAL session_replication_role = replica", "42501"},
		{"a truncate", as, "TRUNCATE demo.write_log", "FG403"},
		{"an insert", as, "INSERT INTO demo.write_log (resource, epoch, revision, operation, account, amount_cents) VALUES ('account/acct-1', 1, 1, 'x', 'acct-1', 1)", "FG403"},
	} {
		if code := refused(t, conn, tc.setup, tc.sql); code != tc.want {
			t.Errorf("%s: SQLSTATE %q, want %s", tc.name, code, tc.want)
		}
	}
	// The same stamp in a transaction of the gateway's role passes: the
	// refusals above are the missing privileges, not a broken guard.
	if code := refused(t, conn, "SELECT fencegw.fence('account/acct-1', 1, 1, false)", write); code != "" {
		t.Fatalf("a fenced write of the row's resource: SQLSTATE %s, want it allowed", code)
	}
	if got := balance(t, conn, "acct-1"); got != before {
		t.Fatalf("balance %d, want %d: an intruder's write landed", got, before)
	}
	var rows int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM demo.write_log").Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("write_log has %d rows (%v), want 0", rows, err)
	}
}

// intruder creates a role for conn's test database, dropped after the
// test (roles are cluster-wide).
func intruder(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	role := "fencegw_intruder_" + strings.ReplaceAll(conn.Config().Database, "-", "_")
	exec(t, conn, "CREATE ROLE "+role+" NOLOGIN")
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), conn.Config().ConnString())
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP OWNED BY "+role+"; DROP ROLE "+role)
			c.Close(context.Background())
		}
	})
	return role
}

// TestForeignTriggersAreFlagged: TRIGGER on a guarded table is worth the
// gateway's own rights (a trigger runs inside the gateway's writes, as
// the gateway), so a trigger whose function the table's owner did not
// write, here one in the intruder's temporary schema, fails guard check.
func TestForeignTriggersAreFlagged(t *testing.T) {
	conn, pol := demo(t)
	ctx := context.Background()
	if err := guard.Install(ctx, conn, pol); err != nil {
		t.Fatal(err)
	}
	// The owner's own triggers are the application's business.
	exec(t, conn, `CREATE FUNCTION demo.touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`)
	exec(t, conn, "CREATE TRIGGER app_touch BEFORE UPDATE ON demo.accounts FOR EACH ROW EXECUTE FUNCTION demo.touch()")
	if _, err := guard.Check(ctx, conn, pol); err != nil {
		t.Fatalf("check beside the owner's trigger: %v", err)
	}

	role := intruder(t, conn)
	exec(t, conn, "GRANT USAGE ON SCHEMA demo TO "+role)
	exec(t, conn, "GRANT TRIGGER ON demo.accounts TO "+role)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, tx.Conn(), "SET LOCAL ROLE "+role)
	exec(t, tx.Conn(), `CREATE FUNCTION pg_temp.evil() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`)
	exec(t, tx.Conn(), "CREATE TRIGGER zz_evil AFTER UPDATE ON demo.accounts FOR EACH ROW EXECUTE FUNCTION pg_temp.evil()")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	statuses, err := guard.Check(ctx, conn, pol)
	if !errors.Is(err, guard.ErrNotGuarded) || !strings.Contains(statuses[0].Problem, "zz_evil") || !strings.Contains(statuses[0].Problem, role) {
		t.Fatalf("check beside the intruder's trigger: %v %+v, want demo.accounts flagged naming zz_evil and its author", err, statuses)
	}
}

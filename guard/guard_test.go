package guard_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/guard"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/schema"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// demo returns a connection to a fresh database with the gateway's schema
// and the demo application, and the demo policy.
func demo(t testing.TB) (*pgx.Conn, *policy.Policy) {
	t.Helper()
	dbURL := testenv.NewDatabase(t)
	if err := schema.Up(dbURL, schema.Gateway(), schema.Dir("../testdata/demo/migrations", "demo_schema_migrations")); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Load("../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn, pol
}

func exec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// refused runs sql in a transaction of its own after setup and returns the
// SQLSTATE it failed with ("" if it did not).
func refused(t *testing.T, conn *pgx.Conn, setup, sql string) string {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if setup != "" {
		if _, err := tx.Exec(ctx, setup); err != nil {
			t.Fatalf("%s: %v", setup, err)
		}
	}
	_, err = tx.Exec(ctx, sql)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return ""
}

func balance(t *testing.T, conn *pgx.Conn, id string) int64 {
	t.Helper()
	var b int64
	if err := conn.QueryRow(context.Background(), "SELECT balance_cents FROM demo.accounts WHERE id = $1", id).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInstallCheckRemove: Check says what is missing before Install,
// nothing after it, names a tampered trigger, and reports a guarded table
// the policy no longer lists; Remove takes the triggers off again.
func TestInstallCheckRemove(t *testing.T) {
	conn, pol := demo(t)
	ctx := context.Background()
	statuses, err := guard.Check(ctx, conn, pol)
	if !errors.Is(err, guard.ErrNotGuarded) || len(statuses) != 2 || !strings.Contains(statuses[0].Problem, "no fencegw_guard trigger") {
		t.Fatalf("before install: %v %+v", err, statuses)
	}
	if err := guard.Install(ctx, conn, pol); err != nil {
		t.Fatal(err)
	}
	if err := guard.Install(ctx, conn, pol); err != nil {
		t.Fatalf("install twice: %v", err)
	}
	if statuses, err := guard.Check(ctx, conn, pol); err != nil || statuses[0].Problem != "" || statuses[1].Problem != "" {
		t.Fatalf("after install: %v %+v", err, statuses)
	}

	exec(t, conn, "ALTER TABLE demo.write_log DISABLE TRIGGER fencegw_guard")
	exec(t, conn, "DROP TRIGGER fencegw_guard_truncate ON demo.accounts")
	statuses, err = guard.Check(ctx, conn, pol)
	if !errors.Is(err, guard.ErrNotGuarded) || !strings.Contains(statuses[0].Problem, "no fencegw_guard_truncate trigger") ||
		!strings.Contains(statuses[1].Problem, "disabled") {
		t.Fatalf("after tampering: %v %+v", err, statuses)
	}
	if err := guard.Install(ctx, conn, pol); err != nil {
		t.Fatal(err)
	}
	if _, err := guard.Check(ctx, conn, pol); err != nil {
		t.Fatalf("install did not repair what was tampered with: %v", err)
	}
	for _, tamper := range []struct{ sql, want string }{
		{"ALTER TABLE demo.accounts ENABLE REPLICA TRIGGER fencegw_guard", "replica"},
		{"CREATE OR REPLACE TRIGGER fencegw_guard AFTER INSERT ON demo.accounts FOR EACH ROW EXECUTE FUNCTION fencegw.guard_row('Laccount/', 'Cid')", "not the trigger"},
		{"CREATE OR REPLACE TRIGGER fencegw_guard AFTER INSERT OR UPDATE OR DELETE ON demo.accounts FOR EACH ROW WHEN (false) EXECUTE FUNCTION fencegw.guard_row('Laccount/', 'Cid')", "not the trigger"},
		{"CREATE OR REPLACE TRIGGER fencegw_guard AFTER INSERT OR UPDATE OR DELETE ON demo.accounts FOR EACH ROW EXECUTE FUNCTION fencegw.guard_truncate()", "not the trigger"},
		{"CREATE OR REPLACE TRIGGER fencegw_guard AFTER INSERT OR UPDATE OR DELETE ON demo.accounts FOR EACH ROW EXECUTE FUNCTION fencegw.guard_row('Lacct/', 'Cid')", "another resource name"},
		{"DROP TRIGGER fencegw_guard ON demo.accounts; CREATE CONSTRAINT TRIGGER fencegw_guard AFTER INSERT OR UPDATE OR DELETE ON demo.accounts DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fencegw.guard_row('Laccount/', 'Cid')", "deferral"},
	} {
		exec(t, conn, tamper.sql)
		statuses, err := guard.Check(ctx, conn, pol)
		if !errors.Is(err, guard.ErrNotGuarded) || !strings.Contains(statuses[0].Problem, tamper.want) {
			t.Errorf("after %s: %v %+v, want %q", tamper.sql, err, statuses, tamper.want)
		}
		if err := guard.Install(ctx, conn, pol); err != nil {
			t.Fatal(err)
		}
	}
	exec(t, conn, "SET search_path = fencegw, public") // the function names then print without their schema
	if _, err := guard.Check(ctx, conn, pol); err != nil {
		t.Errorf("check with fencegw on the search_path: %v", err)
	}
	exec(t, conn, "RESET search_path")

	fewer, err := policy.Parse("p.yaml", []byte(strings.Replace(policyText(t), "  demo.write_log:\n    resource: account\n    columns: {account: account}\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	statuses, err = guard.Check(ctx, conn, fewer)
	if err != nil || len(statuses) != 2 || statuses[1].Table != "demo.write_log" || statuses[1].Problem != "not in the policy" {
		t.Fatalf("a guarded table the policy dropped: %v %+v", err, statuses)
	}

	if missing, err := guard.Remove(ctx, conn, pol); err != nil || len(missing) > 0 {
		t.Fatalf("remove = %v, %v; want every table found", missing, err)
	}
	if _, err := guard.Check(ctx, conn, pol); !errors.Is(err, guard.ErrNotGuarded) {
		t.Fatalf("after remove: %v", err)
	}
	if code := refused(t, conn, "", "UPDATE demo.accounts SET balance_cents = 1 WHERE id = 'acct-1'"); code != "" {
		t.Fatalf("a direct write after remove: SQLSTATE %s", code)
	}
	// A guarded table that does not exist has nothing to take off, and
	// says so; the tables that do exist still lose their triggers.
	if err := guard.Install(ctx, conn, pol); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "DROP TABLE demo.write_log"); err != nil {
		t.Fatal(err)
	}
	if code := refused(t, conn, "", "UPDATE demo.accounts SET balance_cents = 2 WHERE id = 'acct-1'"); code == "" {
		t.Fatal("a direct write to a guarded table went through before remove")
	}
	if missing, err := guard.Remove(ctx, conn, pol); err != nil || !slices.Equal(missing, []string{"demo.write_log"}) {
		t.Fatalf("remove with a table dropped = %v, %v; want it named", missing, err)
	}
	if code := refused(t, conn, "", "UPDATE demo.accounts SET balance_cents = 3 WHERE id = 'acct-1'"); code != "" {
		t.Fatalf("a direct write after remove with a table dropped: SQLSTATE %s", code)
	}
}

func policyText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestInstallRefusesWhatCannotWork: a table the triggers could not guard
// exactly is refused, and nothing is installed anywhere, not even on the
// tables before it.
func TestInstallRefusesWhatCannotWork(t *testing.T) {
	conn, _ := demo(t)
	ctx := context.Background()
	exec(t, conn, "CREATE TABLE demo.priced (id numeric PRIMARY KEY)")
	exec(t, conn, "CREATE TABLE demo.split (id text) PARTITION BY LIST (id)")
	exec(t, conn, "CREATE TABLE demo.parent (id text)")
	exec(t, conn, "CREATE TABLE demo.child () INHERITS (demo.parent)")
	for _, tc := range []struct{ table, column, want string }{
		{"demo.nope", "id", "no such table"},
		{"public.demo_schema_migrations", "acct", "no column acct"}, // the demo's version table
		{"demo.priced", "id", "key column id is numeric"},
		{"demo.split", "id", "not a plain table"},
		{"demo.parent", "id", "inheritance"},
		{"demo.child", "id", "inheritance"},
	} {
		text := strings.Replace(policyText(t), "guarded_tables:\n", "guarded_tables:\n  "+tc.table+":\n    resource: account\n    columns: {account: "+tc.column+"}\n", 1)
		pol, err := policy.Parse("p.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if err := guard.Install(ctx, conn, pol); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("install with %s.%s: %v, want %q", tc.table, tc.column, err, tc.want)
		}
		// demo.accounts sorts first: all or none means not even there.
		if code := refused(t, conn, "", "UPDATE demo.accounts SET balance_cents = 1 WHERE id = 'acct-1'"); code != "" {
			t.Errorf("a refused install left a trigger behind: SQLSTATE %s", code)
		}
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'fencegw_guard%'").Scan(&n); err != nil || n != 0 {
			t.Errorf("%d guard triggers after a refused install (%v), want 0", n, err)
		}
	}
}

// TestGuardedRowsRefuseDirectWrites: outside a fenced write of the row's
// resource, every kind of write to a guarded table is refused, and nothing
// changes.
func TestGuardedRowsRefuseDirectWrites(t *testing.T) {
	conn, pol := demo(t)
	if err := guard.Install(context.Background(), conn, pol); err != nil {
		t.Fatal(err)
	}
	// An operator that would let any key pass, for a search_path attack.
	exec(t, conn, "CREATE SCHEMA evil")
	exec(t, conn, "CREATE FUNCTION evil.ne(text, text) RETURNS boolean LANGUAGE sql AS 'SELECT false'")
	exec(t, conn, "CREATE OPERATOR evil.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.ne)")
	before := balance(t, conn, "acct-1")
	fencedOn := func(resource string) string { return "SELECT fencegw.fence('" + resource + "', 1, 1, false)" }
	claimed := func(resource string) string {
		return "SELECT set_config('fencegw.resource', '" + resource + "', true)"
	}
	for _, tc := range []struct{ name, setup, sql string }{
		{"update", "", "UPDATE demo.accounts SET balance_cents = 1 WHERE id = 'acct-1'"},
		{"insert", "", "INSERT INTO demo.accounts VALUES ('acct-500', 5)"},
		{"delete", "", "DELETE FROM demo.accounts WHERE id = 'acct-1'"},
		{"truncate", "", "TRUNCATE demo.write_log"},
		{"copy-like bulk insert", "", "INSERT INTO demo.write_log (resource, epoch, revision, operation, account, amount_cents) SELECT 'x', 1, 1, 'x', 'acct-1', 1"},
		{"another resource's row", fencedOn("account/acct-2"), "UPDATE demo.accounts SET balance_cents = 1 WHERE id = 'acct-1'"},
		{"moving a row out of its resource", fencedOn("account/acct-1"), "UPDATE demo.accounts SET id = 'acct-501' WHERE id = 'acct-1'"},
		{"an empty fence", claimed(""), "UPDATE demo.accounts SET balance_cents = 1 WHERE id = 'acct-1'"},
		{"the row's resource claimed by hand", claimed("account/acct-1"), "UPDATE demo.accounts SET balance_cents = 1 WHERE id = 'acct-1'"},
		{"a claim beside another fence", fencedOn("account/acct-2") + "; " + claimed("account/acct-2\naccount/acct-1"), "UPDATE demo.accounts SET balance_cents = 1 WHERE id = 'acct-1'"},
		{"a fence rolled back to a savepoint", "SAVEPOINT s; " + fencedOn("account/acct-1") + "; ROLLBACK TO SAVEPOINT s; " + claimed("account/acct-1"), "UPDATE demo.accounts SET balance_cents = 1 WHERE id = 'acct-1'"},
		{"truncate inside a fenced write", fencedOn("account/acct-1"), "TRUNCATE demo.write_log"},
		{"a bypass set by hand", "SET LOCAL fencegw.bypass = '1'", "UPDATE demo.accounts SET balance_cents = 1 WHERE id = 'acct-1'"},
		{"an operator swapped through search_path", fencedOn("account/acct-2") + "; SET LOCAL search_path = evil, pg_catalog", "UPDATE demo.accounts SET balance_cents = 1 WHERE id = 'acct-1'"},
	} {
		if code := refused(t, conn, tc.setup, tc.sql); code != "FG403" {
			t.Errorf("%s: SQLSTATE %q, want FG403", tc.name, code)
		}
	}
	if code := refused(t, conn, fencedOn("account/acct-1"), "UPDATE demo.accounts SET balance_cents = 1 WHERE id = 'acct-1'"); code != "" {
		t.Errorf("the row's own resource: SQLSTATE %s, want it allowed", code)
	}
	_, err := conn.CopyFrom(context.Background(), pgx.Identifier{"demo", "accounts"}, []string{"id", "balance_cents"},
		pgx.CopyFromRows([][]any{{"acct-600", int64(1)}}))
	if code := sqlstate(err); code != "FG403" {
		t.Errorf("COPY: %v, want FG403", err)
	}
	// Another trigger that changes the key after the guard looked would
	// move the row into another resource: the guard looks last (AFTER).
	exec(t, conn, `CREATE FUNCTION demo.lower_id() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN NEW.id := lower(NEW.id); RETURN NEW; END $$`)
	exec(t, conn, "CREATE TRIGGER zz_lower_id BEFORE INSERT ON demo.accounts FOR EACH ROW EXECUTE FUNCTION demo.lower_id()")
	if code := refused(t, conn, fencedOn("account/ACCT-601"), "INSERT INTO demo.accounts VALUES ('ACCT-601', 0)"); code != "FG403" {
		t.Errorf("a row another trigger moved out of the fenced resource: SQLSTATE %q, want FG403", code)
	}
	if got := balance(t, conn, "acct-1"); got != before {
		t.Fatalf("balance %d, want %d: a refused write changed it", got, before)
	}
	var rows int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM demo.write_log").Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("write_log has %d rows (%v), want 0", rows, err)
	}
}

// TestBypassIsAuditedAndGranted: a bypass needs a reason, lets its own
// transaction write, is logged with who and why when it commits, ends with
// its transaction, and is closed to roles not granted it.
func TestBypassIsAuditedAndGranted(t *testing.T) {
	conn, pol := demo(t)
	ctx := context.Background()
	if err := guard.Install(ctx, conn, pol); err != nil {
		t.Fatal(err)
	}
	if code := refused(t, conn, "", "SELECT fencegw.bypass('  ')"); code != "FG400" {
		t.Errorf("a bypass without a reason: SQLSTATE %q, want FG400", code)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, tx.Conn(), "SELECT fencegw.bypass('backfill for ticket 123')")
	exec(t, tx.Conn(), "UPDATE demo.accounts SET balance_cents = 7 WHERE id = 'acct-3'")
	exec(t, tx.Conn(), "TRUNCATE demo.write_log")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := balance(t, conn, "acct-3"); got != 7 {
		t.Fatalf("balance %d after the bypass, want 7", got)
	}
	var why, by string
	if err := conn.QueryRow(ctx, "SELECT why, by_user FROM fencegw.bypass_log").Scan(&why, &by); err != nil || why != "backfill for ticket 123" || by != conn.Config().User {
		t.Fatalf("bypass_log: %q by %q (%v), want the reason and %q", why, by, err, conn.Config().User)
	}
	if code := refused(t, conn, "", "UPDATE demo.accounts SET balance_cents = 8 WHERE id = 'acct-3'"); code != "FG403" {
		t.Errorf("the next transaction: SQLSTATE %q, want FG403: a bypass ends with its transaction", code)
	}

	// A role that may write the table but was not granted EXECUTE on
	// fencegw.bypass; roles are cluster-wide, so this one is named after
	// the test database and dropped after.
	role := "fencegw_test_" + strings.ReplaceAll(conn.Config().Database, "-", "_")
	exec(t, conn, "CREATE ROLE "+role+" NOLOGIN")
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), conn.Config().ConnString())
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP OWNED BY "+role+"; DROP ROLE "+role)
			c.Close(context.Background())
		}
	})
	exec(t, conn, "GRANT USAGE ON SCHEMA demo TO "+role)
	exec(t, conn, "GRANT SELECT, UPDATE ON demo.accounts TO "+role)
	if code := refused(t, conn, "SET LOCAL ROLE "+role, "UPDATE demo.accounts SET balance_cents = 1 WHERE id = 'acct-4'"); code != "FG403" {
		t.Errorf("a writer with no grant on the fencegw schema: SQLSTATE %q, want FG403", code)
	}
	exec(t, conn, "GRANT USAGE ON SCHEMA fencegw TO "+role)
	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, tx.Conn(), "SET LOCAL ROLE "+role)
	_, err = tx.Exec(ctx, "SELECT fencegw.bypass('sneaky')")
	_ = tx.Rollback(ctx)
	if sqlstate(err) != "42501" || !strings.Contains(err.Error(), "function") {
		t.Errorf("bypass by a role not granted it: %v, want permission denied for the function", err)
	}
	exec(t, conn, "GRANT EXECUTE ON FUNCTION fencegw.bypass(text) TO "+role)
	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, tx.Conn(), "SET LOCAL ROLE "+role)
	exec(t, tx.Conn(), "SELECT fencegw.bypass('granted: fixing acct-4')") // no grant on bypass_log needed
	exec(t, tx.Conn(), "UPDATE demo.accounts SET balance_cents = 9 WHERE id = 'acct-4'")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := balance(t, conn, "acct-4"); got != 9 {
		t.Fatalf("balance %d after a granted bypass, want 9", got)
	}
	var loggedRole string
	if err := conn.QueryRow(ctx, "SELECT by_role FROM fencegw.bypass_log ORDER BY id DESC LIMIT 1").Scan(&loggedRole); err != nil || loggedRole != role {
		t.Errorf("the granted bypass logged role %q (%v), want %q", loggedRole, err, role)
	}
}

func sqlstate(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// TestKeyLiteralsWithQuotes: a key template whose literals hold a quote
// and a backslash survives the trip into the trigger's arguments and back.
func TestKeyLiteralsWithQuotes(t *testing.T) {
	conn, _ := demo(t)
	ctx := context.Background()
	exec(t, conn, "CREATE TABLE demo.odd (name text PRIMARY KEY)")
	pol, err := policy.Parse("p.yaml", []byte(`
kinds:
  odd:
    template: "o'k\\x/{name}"
operations:
  touch:
    resource: odd
    args: {name: {type: string}}
    statements: [{sql: "INSERT INTO demo.odd VALUES (:name)"}]
guarded_tables:
  demo.odd: {resource: odd, columns: {name: name}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := guard.Install(ctx, conn, pol); err != nil {
		t.Fatal(err)
	}
	if _, err := guard.Check(ctx, conn, pol); err != nil {
		t.Fatalf("check: %v", err)
	}
	if code := refused(t, conn, `SELECT fencegw.fence(E'o''k\\x/n1', 1, 1, false)`, "INSERT INTO demo.odd VALUES ('n1')"); code != "" {
		t.Errorf("a write fenced on o'k\\x/n1: SQLSTATE %s, want it allowed", code)
	}
	if code := refused(t, conn, `SELECT fencegw.fence('ok/n1', 1, 1, false)`, "INSERT INTO demo.odd VALUES ('n1')"); code != "FG403" {
		t.Errorf("a write fenced on ok/n1: SQLSTATE %q, want FG403", code)
	}
}

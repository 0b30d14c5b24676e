package fence_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/guard"
	"github.com/fencegw/fencegw/tokens"
)

// appRole creates a login role for d's database with what an
// application's sql_role has: its tables, USAGE on schema fencegw, and
// nothing else; dropped after the test. It returns the role and a
// connection logged in as it.
func appRole(t *testing.T, d *db, suffix string) (string, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	role := "fencegw_app_" + suffix + "_" + d.pool.Config().ConnConfig.Database[len("fencegw_test_"):]
	for _, sql := range []string{
		"CREATE ROLE " + role + " LOGIN",
		"GRANT USAGE ON SCHEMA demo, fencegw TO " + role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA demo TO " + role,
		"GRANT USAGE ON ALL SEQUENCES IN SCHEMA demo TO " + role,
	} {
		if _, err := d.pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	t.Cleanup(func() {
		_, _ = d.pool.Exec(context.Background(), "DROP OWNED BY "+role+"; DROP ROLE "+role)
	})
	u, err := url.Parse(d.pool.Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role) // the test cluster trusts local logins
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return role, conn
}

// run runs c on conn's backend as the SQL front does, and returns the
// SQLSTATE it failed with ("" for none).
func run(conn *pgx.Conn, c fence.Call) string {
	_, err := conn.PgConn().ExecParams(context.Background(), c.SQL, c.Params, c.ParamOIDs, nil, nil).Close()
	return sqlState(err)
}

func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return ""
}

// TestOnlyTheFrontFencesASession: a session logged in as an
// application's role, registered as a session of the SQL front, gets a
// guarded row written only through the statement that carries the MAC
// of its fences under its own key. Not with another backend's key, nor
// its MAC on another backend or for other fences or tokens, nor by
// calling the fence, claiming the resource, stamping or
// registering itself, switching to the gateway's role or declaring a
// bypass; once unregistered, not with the secret either. Only the one
// fenced write changed the balance.
func TestOnlyTheFrontFencesASession(t *testing.T) {
	d := newDB(t)
	ctx := context.Background()
	admin, err := d.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = guard.Install(ctx, admin.Conn(), d.pol)
	admin.Release()
	if err != nil {
		t.Fatal(err)
	}
	role, conn := appRole(t, d, "s")
	_, other := appRole(t, d, "o")
	gateway := role + "_gw"
	if _, err := d.pool.Exec(ctx, "CREATE ROLE "+gateway+"; GRANT ALL ON ALL TABLES IN SCHEMA fencegw TO "+gateway); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = d.pool.Exec(context.Background(), "DROP OWNED BY "+gateway+"; DROP ROLE "+gateway) })

	session, err := fence.RegisterFrontSession(ctx, d.pool, conn.PgConn().PID(), role, "billing")
	if err != nil {
		t.Fatal(err)
	}
	elsewhere, err := fence.RegisterFrontSession(ctx, d.pool, other.PgConn().PID(), role, "billing")
	if err != nil {
		t.Fatal(err)
	}
	fenceAt := func(s *fence.FrontSession, revision int64) fence.Call {
		return s.FenceCall([]fence.FrontFence{{Resource: "account/acct-1", Token: tokens.Token{Epoch: 1, Revision: revision}}})
	}
	const write = "UPDATE demo.accounts SET balance_cents = balance_cents - 1 WHERE id = 'acct-1'"
	before := balance(t, d, "acct-1")

	for _, tc := range []struct {
		name string
		try  func() string
		want string
	}{
		{"another backend's key", func() string { return run(conn, fenceAt(elsewhere, 10)) }, "42501"},
		{"its own MAC on another backend", func() string { return run(other, fenceAt(session, 10)) }, "42501"},
		{"its MAC for other fences", func() string {
			c := fenceAt(session, 10)
			c.Params[1] = []byte(`{"account/acct-2"}`)
			return run(conn, c)
		}, "42501"},
		{"its MAC for a newer token", func() string {
			c := fenceAt(session, 10)
			c.Params[3] = []byte(`{11}`)
			return run(conn, c)
		}, "42501"},
		{"the fence itself", func() string { return exec(conn, "SELECT fencegw.fence('account/acct-1', 1, 10, false)") }, "42501"},
		{"claiming the resource", func() string {
			return exec(conn, "SELECT set_config('fencegw.resource', 'account/acct-1', true)", write)
		}, "FG403"},
		{"stamping unchecked", func() string { return exec(conn, "SELECT fencegw.stamp_unfenced('account/acct-1', 1, 10, true)") }, "42501"},
		{"registering itself", func() string {
			return exec(conn, "INSERT INTO fencegw.front_sessions (pid, secret, role, client) VALUES (pg_backend_pid(), sha256('x'), current_user, 'x')")
		}, "42501"},
		{"reading the secrets", func() string { return exec(conn, "SELECT secret FROM fencegw.front_sessions") }, "42501"},
		{"the gateway's role", func() string { return exec(conn, "SET LOCAL ROLE "+gateway) }, "42501"},
		{"a bypass", func() string { return exec(conn, "SELECT fencegw.bypass('just this once')") }, "42501"},
		{"a refusal", func() string { return run(conn, fence.RefuseCall("FG403", "refused", "")) }, "FG403"},
	} {
		if got := tc.try(); got != tc.want {
			t.Errorf("%s: SQLSTATE %q, want %s", tc.name, got, tc.want)
		}
	}
	if got := balance(t, d, "acct-1"); got != before {
		t.Fatalf("balance %d, want %d: a write the front did not fence landed", got, before)
	}

	// The front's own statement, in the session's transaction, admits
	// the row; and it does not outlive the transaction.
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if got := run(conn, fenceAt(session, 10)); got != "" {
		t.Fatalf("the front's fence: SQLSTATE %s", got)
	}
	if _, err := conn.Exec(ctx, write+"; COMMIT"); err != nil {
		t.Fatalf("a fenced write: %v", err)
	}
	if got := exec(conn, write); got != "FG403" {
		t.Fatalf("the next transaction, unfenced: SQLSTATE %q, want FG403", got)
	}
	if err := session.Unregister(ctx, d.pool); err != nil {
		t.Fatal(err)
	}
	if got := run(conn, fenceAt(session, 11)); got != "42501" {
		t.Fatalf("an unregistered session's key: SQLSTATE %q, want 42501", got)
	}
	if got := balance(t, d, "acct-1"); got != before-1 {
		t.Fatalf("balance %d, want %d: only the fenced write", got, before-1)
	}
}

// exec runs statements in one transaction on conn, rolled back, and
// returns the SQLSTATE the first failure had ("" for none).
func exec(conn *pgx.Conn, statements ...string) string {
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return sqlState(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, s := range statements {
		if _, err := tx.Exec(ctx, s); err != nil {
			return sqlState(err)
		}
	}
	return ""
}

func balance(t *testing.T, d *db, account string) int64 {
	t.Helper()
	var b int64
	if err := d.pool.QueryRow(context.Background(), "SELECT balance_cents FROM demo.accounts WHERE id = $1", account).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckFrontRole: the front logs in as an application's role, and
// refuses one that could pass the guard by itself or cannot be fenced,
// saying why.
func TestCheckFrontRole(t *testing.T) {
	d := newDB(t)
	ctx := context.Background()
	app, _ := appRole(t, d, "ok")
	trigger, _ := appRole(t, d, "trg")
	noUsage, _ := appRole(t, d, "nu")
	files, _ := appRole(t, d, "fs")
	member, _ := appRole(t, d, "gw")
	for _, sql := range []string{
		"GRANT TRIGGER ON demo.accounts TO " + trigger,
		"REVOKE USAGE ON SCHEMA fencegw FROM " + noUsage,
		"GRANT pg_read_server_files TO " + files,
		"GRANT " + app + " TO " + member, // harmless: an application role's membership
	} {
		if _, err := d.pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	guarded := []string{"demo.accounts", "demo.write_log"}
	if err := fence.CheckFrontRole(ctx, d.pool, app, guarded); err != nil {
		t.Fatalf("an application's role: %v", err)
	}
	for _, tc := range []struct{ name, role, want string }{
		{"a superuser", d.pool.Config().ConnConfig.User, "it is a superuser"},
		{"TRIGGER on a guarded table", trigger, "may put triggers on, guarded tables: demo.accounts"},
		{"no USAGE on fencegw", noUsage, "GRANT USAGE ON SCHEMA fencegw TO"},
		{"the server's files", files, "read or write the server's files"},
		{"no such role", "fencegw_nobody", "no such role"},
	} {
		err := fence.CheckFrontRole(ctx, d.pool, tc.role, guarded)
		if !errors.Is(err, fence.ErrFrontRole) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want refused: %q", tc.name, err, tc.want)
		}
	}
	// A member of the gateway's role may SET ROLE to it, and fence.
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+app); err != nil {
			return err
		}
		return fence.CheckFrontRole(ctx, tx, member, guarded)
	})
	if !errors.Is(err, fence.ErrFrontRole) || !strings.Contains(err.Error(), "member of the gateway's role") {
		t.Errorf("a member of the gateway's role: %v, want refused", err)
	}
}

package sqlfront_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/sqlfront"
)

const debit = "UPDATE demo.accounts SET balance_cents = balance_cents - 100 WHERE id = '%s'"

// tryTx runs statements in one transaction as client and returns the
// error of the first that failed, then of the COMMIT if none did; the
// transaction is rolled back after a failure.
func tryTx(t *testing.T, conn *pgx.Conn, statements ...string) error {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, s := range statements {
		if _, err := tx.Exec(ctx, s); err != nil {
			// The transaction is aborted: so is every statement after.
			if _, after := tx.Exec(ctx, "SELECT 1"); sqlState(after) != "25P02" {
				t.Errorf("a statement after %q failed: %v, want 25P02", s, after)
			}
			return err
		}
	}
	return tx.Commit(ctx)
}

// TestTokenRefusals: each token the front refuses fails its statement
// and its transaction with the SQLSTATE a driver reads (a stale token
// FG409 naming the fence; one the authority did not issue to this
// client for this resource FG403; a malformed list, two tokens for one
// resource, a token outside a transaction block or in a session-level
// SET FG400), the statements after it fail, and nothing is written. The
// refusals of tokens are in the audit with the client and the
// connection's statement.
func TestTokenRefusals(t *testing.T) {
	f := newFront(t)
	conn := f.connect(billing)
	const account, resource = "acct-31", "account/acct-31"
	old := f.lease(billing, resource, 30, 0)
	f.release(billing, old)
	cur := f.lease(billing, resource, 30, 0)
	write := strings.Replace(debit, "%s", account, 1)
	set := func(pairs string) string { return "SET LOCAL fencegw.tokens = '" + pairs + "'" }
	if err := tryTx(t, conn, set(resource+"="+cur.Token), write); err != nil {
		t.Fatalf("the holder's write: %v", err)
	}
	ledgers := f.lease(ledger, "account/acct-32", 30, 0)
	before := f.state(account)

	for _, tc := range []struct {
		name       string
		statements []string
		code, says string
	}{
		{"a stale token", []string{set(resource + "=" + old.Token), write}, "FG409", "the fence is at " + unsigned(t, cur.Token)},
		{"an unsigned token", []string{set(resource + "=" + unsigned(t, cur.Token)), write}, "FG403", "unsigned"},
		{"another client's token", []string{set("account/acct-32=" + ledgers.Token)}, "FG403", "not issued by this authority for account/acct-32 to client billing"},
		{"its token on another resource", []string{set("account/acct-33=" + cur.Token)}, "FG403", "not issued"},
		{"a resource it may not fence", []string{set("job/nightly=" + cur.Token)}, "FG403", "not a name of any resource"},
		{"two tokens for one resource", []string{set(resource + "=" + cur.Token + ", " + resource + "=" + old.Token), write}, "FG400", "twice"},
		{"a malformed list", []string{set(resource), write}, "FG400", "is not resource=token"},
		{"a session-level SET", []string{"SET fencegw.tokens = '" + resource + "=" + cur.Token + "'", write}, "FG400", "SET LOCAL"},
		{"set_config for the session", []string{"SELECT set_config('fencegw.tokens', '" + resource + "=" + cur.Token + "', false)", write}, "FG400", "set_config"},
		{"no token at all", []string{write}, "FG403", "not a fenced write"},
		{"the fence of another row", []string{set(resource + "=" + cur.Token), strings.Replace(debit, "%s", "acct-34", 1)}, "FG403", "fenced on account/acct-31"},
	} {
		err := tryTx(t, conn, tc.statements...)
		if code := sqlState(err); code != tc.code || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want SQLSTATE %s saying %q", tc.name, err, tc.code, tc.says)
		}
		if after := f.state(account); after != before {
			t.Fatalf("%s: %s, was %s: a refused transaction wrote", tc.name, after, before)
		}
	}
	for _, what := range []string{"SET LOCAL outside a transaction", "session-level SET outside a transaction"} {
		sql := set(resource + "=" + cur.Token)
		if what != "SET LOCAL outside a transaction" {
			sql = "SET fencegw.tokens = '" + resource + "=" + cur.Token + "'"
		}
		if _, err := conn.Exec(context.Background(), sql); sqlState(err) != "FG400" {
			t.Errorf("%s: %v, want FG400", what, err)
		}
	}
	if got := f.state("acct-34"); !strings.HasPrefix(got, "balance 1000, log []") {
		t.Fatalf("acct-34: %s, want untouched", got)
	}

	// The audit has the stale token and the refused ones, with who.
	var rows []string
	ok := testenv.WaitFor(30*time.Second, func() bool {
		r, err := f.gw.Pool.Query(context.Background(), `SELECT reason || ' ' || resource || ' ' || client || ' ' || operation || ' ' || (request_id LIKE 'sql-%-%')::text
			FROM fencegw.rejections ORDER BY id`)
		if err != nil {
			return false
		}
		rows, err = pgx.CollectRows(r, pgx.RowTo[string])
		return err == nil && len(rows) >= 4
	})
	want := "stale-token account/acct-31 billing sql true|token-rejected account/acct-31 billing sql true|token-rejected account/acct-32 billing sql true|token-rejected account/acct-33 billing sql true"
	if !ok || strings.Join(rows, "|") != want {
		t.Fatalf("audit: %q, want %q", rows, want)
	}
}

// TestSessionCannotImitateTheFront: through the front, the session's own
// role cannot fence its transaction (fencegw.fence_session without the
// secret), scope it (fencegw.resource, set where the front does not look),
// change role or declare a bypass, nor turn the guard off: nothing it
// tries writes a guarded row.
func TestSessionCannotImitateTheFront(t *testing.T) {
	f := newFront(t)
	gateway := f.role + "_gw"
	f.admin("CREATE ROLE "+gateway, "GRANT ALL ON ALL TABLES IN SCHEMA fencegw TO "+gateway)
	t.Cleanup(func() { _, _ = f.gw.Pool.Exec(context.Background(), "DROP OWNED BY "+gateway+"; DROP ROLE "+gateway) })
	conn := f.connect(billing)
	const account = "acct-35"
	write := strings.Replace(debit, "%s", account, 1)
	before := f.state(account)
	for _, tc := range []struct {
		name       string
		statements []string
		code       string
	}{
		{"the fence function, its secret guessed", []string{`SELECT fencegw.fence_session('\x00'::bytea, ARRAY['account/acct-35'], ARRAY[1::bigint], ARRAY[999999::bigint], ARRAY[false])`, write}, "42501"},
		{"the fence itself", []string{"SELECT fencegw.fence('account/acct-35', 1, 999999, false)", write}, "42501"},
		{"fencegw.resource, set where the front does not read it", []string{"SELECT set_config(concat('fencegw', '.resource'), 'account/acct-35', true)", write}, "FG403"},
		{"the gateway's role", []string{"SET LOCAL ROLE " + gateway, "SELECT fencegw.fence('account/acct-35', 1, 999999, false)", write}, "42501"},
		{"another session authorization", []string{"SET SESSION AUTHORIZATION " + gateway, write}, "42501"},
		{"a bypass", []string{"SELECT fencegw.bypass('just this once')", write}, "42501"},
		{"the guard off", []string{"ALTER TABLE demo.accounts DISABLE TRIGGER fencegw_guard", write}, "42501"},
		{"replica mode", []string{"SET LOCAL session_replication_role = replica", write}, "42501"},
		{"registering itself", []string{"INSERT INTO fencegw.front_sessions (pid, secret, role, client) VALUES (pg_backend_pid(), sha256('x'), current_user, 'billing')", write}, "42501"},
	} {
		if code := sqlState(tryTx(t, conn, tc.statements...)); code != tc.code {
			t.Errorf("%s: SQLSTATE %q, want %s", tc.name, code, tc.code)
		}
	}
	if after := f.state(account); after != before {
		t.Fatalf("%s, was %s: the session wrote a guarded row unfenced", after, before)
	}
}

// TestAuthorityUnavailable: with the token authority's etcd gone, a
// token cannot be judged: the statement fails with 40001 (retry the
// transaction), its transaction with it, and nothing is written.
func TestAuthorityUnavailable(t *testing.T) {
	srv, cli := testenv.PrivateEtcd(t)
	f := newFront(t, func(c *sqlfront.Config) { c.Authority = authority.NewEtcd(cli, testenv.KEK()) })
	const account, resource = "acct-38", "account/acct-38"
	l := f.lease(billing, resource, 60, 0)
	before := f.state(account)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	err := tryTx(t, f.connect(billing), "SET LOCAL fencegw.tokens = '"+resource+"="+l.Token+"'", strings.Replace(debit, "%s", account, 1))
	if sqlState(err) != "40001" || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("a token with the authority unreachable: %v, want 40001", err)
	}
	if after := f.state(account); after != before {
		t.Fatalf("%s, was %s", after, before)
	}
}

// TestTheSecretStaysInTheFront: a session that asks PostgreSQL to quote
// a failed statement's parameters in its errors (any role may set
// log_parameter_max_length_on_error) and makes the front's own fencing
// statement fail (a lock timeout on a fence row someone holds) learns
// nothing of what that statement was sent: the error the front relays
// has its code and message, and no context.
func TestTheSecretStaysInTheFront(t *testing.T) {
	f := newFront(t)
	const account, resource = "acct-40", "account/acct-40"
	l := f.lease(billing, resource, 60, 0)
	if err := tryTx(t, f.connect(billing), "SET LOCAL fencegw.tokens = '"+resource+"="+l.Token+"'", strings.Replace(debit, "%s", account, 1)); err != nil {
		t.Fatal(err) // the fence row exists
	}
	testenv.LockFenceRow(t, f.gw.Pool, resource)
	conn := f.connect(billing)
	err := tryTx(t, conn, "SET log_parameter_max_length_on_error = -1", "SET LOCAL lock_timeout = '10ms'",
		"SET LOCAL fencegw.tokens = '"+resource+"="+l.Token+"'")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Fatalf("the fence behind a locked row: %v, want 55P03", err)
	}
	all := fmt.Sprintf("%+v", *pgErr)
	if pgErr.Where != "" || pgErr.InternalQuery != "" || strings.Contains(all, `\x`) || strings.Contains(all, "parameters") {
		t.Fatalf("the front relayed what its own statement was sent: %s", all)
	}
}

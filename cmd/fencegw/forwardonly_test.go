package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestTheGatewayRoleMovesFencesOnlyForward is issue 34's reproduction: as
// the gateway's role, holding exactly what `fencegw grants` prints,
// connected with its own credentials, no statement lowers a fence or the
// fence floor, deletes or rewrites the audit or the lock history, or
// truncates them; the functions it may call refuse crafted arguments,
// never lower anything and keep what their retention keeps; an
// application's role may call none of them. Before, the role held UPDATE
// and DELETE on the fences and the audit: `UPDATE fencegw.fences SET
// revision = 1` let a stale token write again.
func TestTheGatewayRoleMovesFencesOnlyForward(t *testing.T) {
	ctx := context.Background()
	dbURL := migrated(t)
	admin, _, roleURL := grantedRole(t, dbURL, "../../testdata/demo/policy.yaml", "fencegw_fwd")
	as, err := pgx.Connect(ctx, roleURL)
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close(ctx)

	// What the gateway does in its own right, as the role: a write's fence,
	// a floor raised for the etcd the authority record vouches for,
	// refusals audited, lease events recorded.
	for _, sql := range []string{
		"SELECT fencegw.fence('account/acct-1', 1, 36, false)",
		"SELECT fencegw.fence('account/acct-2', 1, 20, true)",
		"INSERT INTO fencegw.rejections (resource, operation, reason, presented, current) VALUES ('account/acct-1', 'debit', 'stale-token', '1:32', '1:36')",
		"INSERT INTO fencegw.lock_history (resource, event, lease_id, token) VALUES ('account/acct-1', 'granted', 'l1', '1:36')",
	} {
		if _, err := as.Exec(ctx, sql); err != nil {
			t.Fatalf("as the gateway's role, %s: %v", sql, err)
		}
	}
	if _, err := admin.Exec(ctx, "UPDATE fencegw.authority SET identity = 'etcd-a', max_revision = 100 WHERE epoch = 1"); err != nil {
		t.Fatal(err)
	}
	var floor string
	if err := as.QueryRow(ctx, "SELECT epoch || ':' || revision FROM fencegw.raise_fence_floor(1, 10, 'etcd-a')").Scan(&floor); err != nil || floor != "1:10" {
		t.Fatalf("raising the floor as the gateway's role: %s, %v; want 1:10", floor, err)
	}
	before := gatewayState(t, admin)

	for _, tc := range []struct{ name, sql, want string }{
		{"lowering a fence", "UPDATE fencegw.fences SET revision = 1 WHERE resource = 'account/acct-1'", "42501"},
		{"deleting a fence", "DELETE FROM fencegw.fences WHERE resource = 'account/acct-1'", "42501"},
		{"inserting a fence row", "INSERT INTO fencegw.fences (resource, epoch, revision) VALUES ('account/acct-3', 1, 1)", "42501"},
		{"truncating the fences", "TRUNCATE fencegw.fences", "42501"},
		{"a stale fence", "SELECT fencegw.fence('account/acct-1', 1, 32, false)", "FG409"},
		{"an equal fence, strict", "SELECT fencegw.fence('account/acct-2', 1, 20, true)", "FG409"},
		{"a fence below the floor", "SELECT fencegw.fence('account/acct-3', 1, 9, false)", "FG409"},
		{"a fence of no resource", "SELECT fencegw.fence(NULL, 1, 99, false)", "22023"},
		{"a fence of a resource with a line break", "SELECT fencegw.fence('account/acct-9' || chr(10) || 'account/acct-1', 1, 99, false)", "22023"},
		{"a fence at epoch 0", "SELECT fencegw.fence('account/acct-1', 0, 99, false)", "22023"},
		{"a fence at a negative revision", "SELECT fencegw.fence('account/acct-1', 1, -1, false)", "22023"},
		{"a fence, strictness unsaid", "SELECT fencegw.fence('account/acct-1', 1, 99, NULL)", "22023"},
		{"advancing a fence down", "SELECT fencegw.advance_fence('account/acct-1', 1, 1, false)", ""},
		{"advancing no resource", "SELECT fencegw.advance_fence(NULL, 1, 99, false)", "22023"},
		{"advancing to epoch 0", "SELECT fencegw.advance_fence('account/acct-1', 0, 99, false)", "22023"},
		{"advancing, dry run unsaid", "SELECT fencegw.advance_fence('account/acct-1', 1, 99, NULL)", "22023"},
		{"lowering the floor", "UPDATE fencegw.fence_floor SET revision = 0", "42501"},
		{"deleting the floor", "DELETE FROM fencegw.fence_floor", "42501"},
		{"truncating the floor", "TRUNCATE fencegw.fence_floor", "42501"},
		{"raising the floor lower", "SELECT fencegw.raise_fence_floor(1, 3, 'etcd-a')", ""},
		{"raising the floor to NULL", "SELECT fencegw.raise_fence_floor(1, NULL, 'etcd-a')", ""},
		{"raising the floor for another etcd", "SELECT fencegw.raise_fence_floor(1, 50, 'etcd-b')", ""},
		{"raising the floor of an epoch not recorded", "SELECT fencegw.raise_fence_floor(2, 1, 'etcd-a')", ""},
		{"pruning above the floor", "SELECT fencegw.prune_fences('', 100000)", ""},
		{"pruning from NULL", "SELECT fencegw.prune_fences(NULL, 10)", "22023"},
		{"pruning a negative batch", "SELECT fencegw.prune_fences('', -1)", "22023"},
		{"deleting the audit", "DELETE FROM fencegw.rejections", "42501"},
		{"rewriting the audit", "UPDATE fencegw.rejections SET presented = '1:36'", "42501"},
		{"truncating the audit", "TRUNCATE fencegw.rejections", "42501"},
		{"an audit row of an hour past", "INSERT INTO fencegw.rejections (at, resource, operation, reason) VALUES (now() - interval '1 day', 'r', 'debit', 'stale-token')", "42501"},
		{"an audit row of a chosen id", "INSERT INTO fencegw.rejections (id, resource, operation, reason) VALUES (0, 'r', 'debit', 'stale-token')", "42501"},
		{"trimming the audit", "SELECT fencegw.trim_rejections()", ""},
		{"deleting the history", "DELETE FROM fencegw.lock_history", "42501"},
		{"rewriting the history", "UPDATE fencegw.lock_history SET token = '1:1'", "42501"},
		{"truncating the history", "TRUNCATE fencegw.lock_history", "42501"},
		{"a history row of a chosen id", "INSERT INTO fencegw.lock_history (id, resource, event) VALUES (0, 'r', 'granted')", "42501"},
		{"trimming the history", "SELECT fencegw.trim_history()", ""},
		{"stamping without the check", "SELECT fencegw.stamp_unfenced('account/acct-1', 1, 1, true)", "42501"},
		{"redefining the fence", "CREATE OR REPLACE FUNCTION fencegw.fence(p_resource text, p_epoch bigint, p_token bigint, p_strict boolean, p_first boolean DEFAULT true) RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'", "42501"},
		{"running the fence with the caller's rights", "ALTER FUNCTION fencegw.fence(text, bigint, bigint, boolean, boolean) SECURITY INVOKER", "42501"},
		{"a trigger on the fences", "CREATE TRIGGER t BEFORE UPDATE ON fencegw.fences FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()", "42501"},
	} {
		if got := sqlState(as.Exec(ctx, tc.sql)); got != tc.want {
			t.Errorf("%s as the gateway's role: SQLSTATE %q, want %q", tc.name, got, tc.want)
		}
	}
	if after := gatewayState(t, admin); after != before {
		t.Fatalf("the gateway's role changed the fences, the floor or the evidence:\n%s\nwant\n%s", after, before)
	}

	// An application's role: the functions are not its to call.
	app, err := pgx.Connect(ctx, appRole(t, admin, dbURL))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	for _, sql := range []string{
		"SELECT fencegw.fence('account/acct-1', 1, 99, false)",
		"SELECT fencegw.advance_fence('account/acct-1', 1, 99, false)",
		"SELECT fencegw.raise_fence_floor(1, 50, 'etcd-a')",
		"SELECT fencegw.prune_fences('', 100000)",
		"SELECT fencegw.trim_rejections()",
		"SELECT fencegw.trim_history()",
	} {
		if got := sqlState(app.Exec(ctx, sql)); got != "42501" {
			t.Errorf("%s as an application's role: SQLSTATE %q, want 42501", sql, got)
		}
	}
	if after := gatewayState(t, admin); after != before {
		t.Fatalf("an application's role changed the gateway's tables:\n%s\nwant\n%s", after, before)
	}
}

// gatewayState is everything in the fences, the floor, the audit and the
// history, as text.
func gatewayState(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var s string
	err := conn.QueryRow(context.Background(), `SELECT
		(SELECT coalesce(string_agg(format('%s=%s:%s#%s', resource, epoch, revision, writes), ' ' ORDER BY resource), '') FROM fencegw.fences) || E'\n' ||
		(SELECT format('floor %s:%s', epoch, revision) FROM fencegw.fence_floor) || E'\n' ||
		(SELECT coalesce(string_agg(r::text, ' ' ORDER BY id), '') FROM fencegw.rejections r) || E'\n' ||
		(SELECT coalesce(string_agg(h::text, ' ' ORDER BY id), '') FROM fencegw.lock_history h)`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// appRole creates a login role that may write the demo's tables and sees
// the gateway's schema, but holds nothing of the gateway's, dropped when
// the test ends, and returns its URL.
func appRole(t *testing.T, admin *pgx.Conn, dbURL string) string {
	t.Helper()
	ctx := context.Background()
	role := fmt.Sprintf("fencegw_app_%d", time.Now().UnixNano())
	for _, sql := range []string{
		"CREATE ROLE " + role + " LOGIN",
		"GRANT USAGE ON SCHEMA demo, fencegw TO " + role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA demo TO " + role,
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP OWNED BY "+role)
		_, _ = admin.Exec(context.Background(), "DROP ROLE "+role)
	})
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}

// sqlState is the SQLSTATE of a statement's error, "" for none.
func sqlState(_ pgconn.CommandTag, err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

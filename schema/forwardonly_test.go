package schema_test

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/guard"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/schema"
)

// version15Grants is what `fencegw grants` gave the gateway's role on its
// own schema at version 15: the fences, the floor, the audit and the
// history written by the role itself.
var version15Grants = []string{
	"GRANT USAGE ON SCHEMA fencegw TO %s",
	"GRANT SELECT, INSERT, UPDATE, DELETE ON fencegw.fences TO %s",
	"GRANT SELECT, UPDATE ON fencegw.fence_floor TO %s",
	"GRANT SELECT, INSERT, UPDATE ON fencegw.authority TO %s",
	"GRANT SELECT, INSERT, DELETE ON fencegw.rejections TO %s",
	"GRANT SELECT, INSERT, UPDATE, DELETE ON fencegw.idempotency_keys TO %s",
	"GRANT SELECT, INSERT, UPDATE, DELETE ON fencegw.replicas TO %s",
	"GRANT SELECT ON fencegw.bypass_log TO %s",
	"GRANT SELECT, INSERT, UPDATE, DELETE ON fencegw.lock_history TO %s",
	"GRANT SELECT, INSERT, UPDATE, DELETE ON fencegw.history_cursor TO %s",
	"GRANT USAGE ON SEQUENCE fencegw.rejections_id_seq TO %s",
	"GRANT USAGE ON SEQUENCE fencegw.lock_history_id_seq TO %s",
}

// TestForwardOnlyMovesExistingGatewayRoles: a database at version 15 whose
// gateway role holds what version 15's `fencegw grants` gave it is brought
// by Up to hold, for that role, exactly what `fencegw grants` gives a new
// role on the gateway's schema (no writes of the fences or the floor, the
// audit and the history insert-only, the functions that keep them), and
// the role writes through the fence at once; PUBLIC may call none of
// those functions. Down gives the role back version 15's grants.
func TestForwardOnlyMovesExistingGatewayRoles(t *testing.T) {
	ctx := context.Background()
	dbURL := newDemoDatabase(t)
	conn := connect(t, dbURL)
	// Version 15 as it was: fence and the floor's functions ran with their
	// caller's rights, for anyone; the trims and the advance did not exist.
	for _, sql := range []string{
		"ALTER FUNCTION fencegw.fence(text, bigint, bigint, boolean, boolean) SECURITY INVOKER RESET search_path",
		"ALTER FUNCTION fencegw.raise_fence_floor(bigint, bigint, text) SECURITY INVOKER RESET search_path",
		"ALTER FUNCTION fencegw.prune_fences(text, integer) SECURITY INVOKER RESET search_path",
		"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA fencegw TO PUBLIC",
		"REVOKE EXECUTE ON FUNCTION fencegw.bypass(text), fencegw.stamp_unfenced(text, bigint, bigint, boolean) FROM PUBLIC",
		"DROP FUNCTION fencegw.advance_fence(text, bigint, bigint, boolean)",
		"DROP FUNCTION fencegw.trim_rejections()",
		"DROP FUNCTION fencegw.trim_history()",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	old, fresh := newRole(t, conn, "fencegw_v15"), newRole(t, conn, "fencegw_v16")
	for _, g := range version15Grants {
		if _, err := conn.Exec(ctx, fmt.Sprintf(g, old)); err != nil {
			t.Fatal(err)
		}
	}

	m := open(t, dbURL, schema.Gateway())
	if err := m.Up(); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Load("../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	grants, err := guard.Grants(ctx, conn, pol, fresh, schema.GatewayTable)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, grants); err != nil {
		t.Fatal(err)
	}
	want := gatewaySchemaPrivileges(t, conn, fresh)
	if got := gatewaySchemaPrivileges(t, conn, old); !slices.Equal(got, want) {
		t.Errorf("the migrated role holds on fencegw:\n%s\nwant, as `fencegw grants` gives a new role:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := gatewaySchemaPrivileges(t, conn, "public"); slices.ContainsFunc(got, func(p string) bool {
		return slices.ContainsFunc(gatewayWriters, func(fn string) bool { return strings.HasPrefix(p, "EXECUTE "+fn) })
	}) {
		t.Errorf("PUBLIC may call a function that writes the fences or the evidence: %v", got)
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, sql := range []string{
			"SET LOCAL ROLE " + old,
			"SELECT fencegw.fence('account/acct-1', 1, 5, false)",
			"SELECT fencegw.trim_rejections()",
			"SELECT fencegw.trim_history()",
		} {
			if _, err := tx.Exec(ctx, sql); err != nil {
				return fmt.Errorf("%s: %w", sql, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("as the migrated role: %v", err)
	}

	latest, err := schema.Latest(schema.Gateway())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Down(int(latest) - 15); err != nil { // back to version 15
		t.Fatal(err)
	}
	for _, p := range []string{"UPDATE fencegw.fences", "DELETE fencegw.rejections", "UPDATE fencegw.fence_floor"} {
		if !slices.Contains(gatewaySchemaPrivileges(t, conn, old), p) {
			t.Errorf("after down: the role lacks %s, which version 15's grants gave it", p)
		}
	}
}

// gatewayWriters are the functions only the gateway's role may call.
var gatewayWriters = []string{"fencegw.fence(", "fencegw.advance_fence(", "fencegw.raise_fence_floor(",
	"fencegw.prune_fences(", "fencegw.trim_rejections(", "fencegw.trim_history("}

// gatewaySchemaPrivileges lists what role may do to the fencegw schema's
// tables, their columns and its functions, one line each, sorted.
func gatewaySchemaPrivileges(t *testing.T, conn *pgx.Conn, role string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `
		SELECT p || ' ' || c.oid::regclass::text FROM pg_class c,
		       unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'TRIGGER', 'REFERENCES']) p
		 WHERE c.relnamespace = 'fencegw'::regnamespace AND c.relkind = 'r' AND has_table_privilege($1, c.oid, p)
		UNION ALL
		SELECT p || ' ' || c.oid::regclass::text || '.' || a.attname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid,
		       unnest(ARRAY['INSERT', 'UPDATE']) p
		 WHERE c.relnamespace = 'fencegw'::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
		   AND NOT has_table_privilege($1, c.oid, p) AND has_column_privilege($1, c.oid, a.attnum, p)
		UNION ALL
		SELECT 'EXECUTE ' || p.oid::regprocedure::text FROM pg_proc p
		 WHERE p.pronamespace = 'fencegw'::regnamespace AND has_function_privilege($1, p.oid, 'EXECUTE')
		ORDER BY 1`, role)
	if err != nil {
		t.Fatal(err)
	}
	privs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return privs
}

// newRole creates a role for the test, dropped when it ends.
func newRole(t *testing.T, conn *pgx.Conn, prefix string) string {
	t.Helper()
	role := fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
	if _, err := conn.Exec(context.Background(), "CREATE ROLE "+role); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP OWNED BY "+role+"; DROP ROLE "+role)
	})
	return role
}

// newDemoDatabase is a database at gateway schema version 15 (its
// definitions applied as this binary has them) with the demo application.
func newDemoDatabase(t *testing.T) string {
	t.Helper()
	dbURL := testenv.NewDatabase(t)
	upTo15 := fstest.MapFS{}
	src := schema.Gateway()
	names, err := fs.Glob(src.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n < "0016" {
			b, err := fs.ReadFile(src.FS, n)
			if err != nil {
				t.Fatal(err)
			}
			upTo15[n] = &fstest.MapFile{Data: b}
		}
	}
	if err := schema.Up(dbURL, schema.Source{FS: upTo15, Table: schema.GatewayTable, Definitions: src.Definitions}, demoApp); err != nil {
		t.Fatal(err)
	}
	return dbURL
}

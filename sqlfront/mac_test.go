package sqlfront_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestFenceMACNeverReachesTheClient: the front's fence runs as the
// unnamed statement, parsed in every transaction, never kept prepared
// under a name. A session may DEALLOCATE and PREPARE any name in SQL (in
// a DO block the front cannot read, or in the very query that fences):
// had the front kept its statement under a name and only bound it, the
// session's own statement under that name would run with the fence's
// parameters and read its MAC, with which it could fence a later
// transaction itself, past the front's COMMIT check. Here a session
// prepares such statements under the names a front might keep, before
// and around its fences: none ever runs with the fence's parameters.
func TestFenceMACNeverReachesTheClient(t *testing.T) {
	ctx := context.Background()
	f := newFront(t)
	const resource = "account/acct-9193"
	l := f.lease(billing, resource, 30, 0)
	conn := f.connect(billing)
	simple := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("%.80s: %v", sql, err)
		}
	}
	tokens := "SET LOCAL fencegw.tokens = '" + resource + "=" + l.Token + "'"
	capture := func(name string) string {
		return `PREPARE "` + name + `"(bytea, text[], bigint[], bigint[], boolean[]) AS
			WITH c AS (INSERT INTO pg_temp.cap VALUES ($1, $2, $3, $4, $5)) SELECT fencegw.fence_session($1, $2, $3, $4, $5)`
	}
	simple("CREATE TEMP TABLE cap (mac bytea, r text[], e bigint[], v bigint[], s boolean[])")
	for _, name := range []string{"fencegw.fence_session", "fence_session", ""} {
		simple("BEGIN; " + tokens + "; COMMIT")
		if name == "" {
			continue // PREPARE cannot name the unnamed statement
		}
		hidden := strings.ReplaceAll(capture(name), "'", "''")
		simple(`DO $$ BEGIN EXECUTE 'DEALL' || 'OCATE ALL'; EXECUTE '` + hidden + `'; END $$`)
		simple("BEGIN; " + tokens + `; DEALLOCATE ALL; ` + capture(name) + "; COMMIT")
		simple("BEGIN; " + tokens + "; COMMIT")
	}
	var seen int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_temp.cap", pgx.QueryExecModeSimpleProtocol).Scan(&seen); err != nil {
		t.Fatal(err)
	}
	if seen > 0 {
		t.Fatalf("a statement of the session's own ran with the fence's parameters %d times: it read the MAC", seen)
	}
}

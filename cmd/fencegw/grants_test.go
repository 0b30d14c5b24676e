package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestServeWithExactlyTheGrants: a role holding only what `fencegw grants`
// prints (no ownership, no superuser, nothing else) runs serve (its
// start-up checks, the janitor, the replicas' check, the audit), takes a
// lease, writes, writes with an Idempotency-Key and replays it, is
// refused a stale write, and runs inspect; it still cannot declare a
// bypass or delete accounts.
func TestServeWithExactlyTheGrants(t *testing.T) {
	ctx := context.Background()
	const demo = "../../testdata/demo/policy.yaml"
	dbURL := migrated(t)
	if err := execute(ctx, io.Discard, "guard", "--database-url", dbURL, "--policy", demo, "install"); err != nil {
		t.Fatal(err)
	}
	admin, role, roleURL := grantedRole(t, dbURL, demo, "fencegw_gw")

	cfg := serveConfigFor(t, roleURL, demo)
	cfg.PruneEvery = 50 * time.Millisecond // the janitor raises the floor and prunes as the role too
	logs := &testenv.Buffer{}
	cfg.logOut = logs
	sctx, stop := context.WithCancel(ctx)
	addrs, served := make(chan string, 1), make(chan error, 1)
	go func() { served <- serve(sctx, cfg, func(a string) { addrs <- a }) }()
	var base string
	select {
	case a := <-addrs:
		base = "http://" + a
	case err := <-served:
		t.Fatalf("serve as %s: %v\n%s", role, err, logs)
	}
	defer func() { stop(); <-served }()

	post := func(path, token, key, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Fencing-Token", token)
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", `"`+key+`"`)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	field := func(body, name string) string {
		i := strings.Index(body, `"`+name+`":"`)
		if i < 0 {
			t.Fatalf("no %s in %s", name, body)
		}
		return strings.SplitN(body[i+len(name)+4:], `"`, 2)[0]
	}
	debit := `{"account": "acct-1", "amount_cents": 5}`
	status, body := post("/v1/leases", "", "", `{"resource": "account/acct-1", "ttl": 30}`)
	if status != http.StatusCreated {
		t.Fatalf("lease: %d %s", status, body)
	}
	old, firstLease := field(body, "token"), body
	if status, body = post("/v1/ops/debit", old, "", debit); status != http.StatusOK {
		t.Fatalf("debit: %d %s\n%s", status, body, logs)
	}
	if status, body = post("/v1/ops/debit", old, "k1", debit); status != http.StatusOK {
		t.Fatalf("keyed debit: %d %s\n%s", status, body, logs)
	}
	// Its replay locks the key's row to wait for any standby.
	if status, body = post("/v1/ops/debit", old, "k1", debit); status != http.StatusOK {
		t.Fatalf("keyed debit replayed: %d %s\n%s", status, body, logs)
	}
	release, _ := http.NewRequest(http.MethodDelete, base+"/v1/leases/"+field(firstLease, "lease_id"), nil)
	resp, err := http.DefaultClient.Do(release)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("release: %v %v", resp, err)
	}
	resp.Body.Close()
	if status, body = post("/v1/leases", "", "", `{"resource": "account/acct-1", "ttl": 30}`); status != http.StatusCreated {
		t.Fatalf("second lease: %d %s", status, body)
	}
	if status, body = post("/v1/ops/debit", field(body, "token"), "", debit); status != http.StatusOK {
		t.Fatalf("debit with the newer token: %d %s", status, body)
	}
	if status, body = post("/v1/ops/debit", old, "", debit); status != http.StatusConflict {
		t.Fatalf("stale debit: %d %s", status, body)
	}
	if !testenv.WaitFor(30*time.Second, func() bool {
		var refused int
		_ = admin.QueryRow(ctx, "SELECT count(*) FROM fencegw.rejections").Scan(&refused)
		return refused > 0
	}) {
		t.Fatalf("the refusal never reached the audit as %s:\n%s", role, logs)
	}
	if !testenv.WaitFor(30*time.Second, func() bool {
		var replicas int
		_ = admin.QueryRow(ctx, "SELECT count(*) FROM fencegw.replicas").Scan(&replicas)
		return replicas > 0
	}) {
		t.Fatalf("the replica never recorded its policy as %s:\n%s", role, logs)
	}
	if !testenv.WaitFor(30*time.Second, func() bool {
		var released int
		_ = admin.QueryRow(ctx, "SELECT count(*) FROM fencegw.lock_history WHERE resource = 'account/acct-1' AND event = 'released'").Scan(&released)
		return released > 0
	}) {
		t.Fatalf("the release never reached the lock history as %s:\n%s", role, logs)
	}
	if err := execute(ctx, io.Discard, "inspect", "--history", "account/acct-1", "--database-url", roleURL, "--etcd", strings.Join(testenv.EtcdEndpoints(), ",")); err != nil {
		t.Fatalf("inspect --history as %s: %v", role, err)
	}

	if !testenv.WaitFor(30*time.Second, func() bool { return strings.Contains(logs.String(), "fence rows pruned") }) {
		t.Fatalf("the janitor never pruned fence rows as %s:\n%s", role, logs)
	}
	var out bytes.Buffer
	if err := execute(ctx, &out, "inspect", "--database-url", roleURL, "--etcd", strings.Join(testenv.EtcdEndpoints(), ","), "--json"); err != nil {
		t.Fatalf("inspect as %s: %v", role, err)
	}
	for _, forbidden := range []string{
		"SELECT fencegw.bypass('not mine')",
		"DELETE FROM demo.accounts",
		"SELECT fencegw.stamp_unfenced('account/acct-1', 1, 1, true)",
	} {
		err := pgx.BeginFunc(ctx, admin, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+role); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, forbidden)
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("%s as %s = %v, want permission denied", forbidden, role, err)
		}
	}
	stop()
	if err := <-served; err != nil {
		t.Fatalf("serve as %s: %v", role, err)
	}
	served <- nil // for the deferred stop
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "permission denied") || strings.Contains(line, "failed") {
			t.Errorf("serve as %s logged: %s", role, line)
		}
	}
}

// TestGrantsAreOnlyGrants: a role name with quotes or a comment marker
// cannot add a statement to what grants prints for psql (every line is a
// comment or a GRANT), and one with a line break is refused.
func TestGrantsAreOnlyGrants(t *testing.T) {
	dbURL := migrated(t)
	var out bytes.Buffer
	if err := execute(context.Background(), &out, "grants", "--database-url", dbURL, "--policy", "../../testdata/demo/policy.yaml", "--role", "x\nSELECT 1"); !errors.Is(err, errUsage) || out.Len() > 0 {
		t.Fatalf("a role with a line break = %v, printed %q; want a usage error and nothing printed", err, &out)
	}
	role := "x'; SELECT 'injected'; --\"y"
	if err := execute(context.Background(), &out, "grants", "--database-url", dbURL, "--policy", "../../testdata/demo/policy.yaml", "--role", role); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.HasPrefix(line, "-- ") && !strings.HasPrefix(line, "GRANT ") {
			t.Errorf("grants printed a line that is neither a comment nor a GRANT: %q", line)
		}
	}
	if !strings.Contains(out.String(), `TO "x`) {
		t.Errorf("the role is not quoted as an identifier:\n%s", &out)
	}
}

// TestGrantsCoverFunctionSchemas: a statement that calls a function in a
// schema holding no table the policy touches still gets USAGE on that
// schema, and the granted role can run it.
func TestGrantsCoverFunctionSchemas(t *testing.T) {
	ctx := context.Background()
	dbURL := migrated(t)
	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `CREATE SCHEMA fnonly; CREATE FUNCTION fnonly.shout(s text) RETURNS text LANGUAGE sql AS $$ SELECT upper(s) $$`); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol := strings.Replace(string(src), "\noperations:\n", `
operations:
  shout:
    resource: account
    args:
      account: {type: string, max_length: 64}
    statements:
      - sql: SELECT fnonly.shout(:account) AS loud
`, 1)
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	role := fmt.Sprintf("fencegw_fn_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP OWNED BY "+role)
		_, _ = admin.Exec(context.Background(), "DROP ROLE "+role)
	})
	var out bytes.Buffer
	if err := execute(ctx, &out, "grants", "--database-url", dbURL, "--policy", path, "--role", role); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `GRANT USAGE ON SCHEMA "fnonly" TO`) {
		t.Fatalf("no USAGE on the function's schema:\n%s", &out)
	}
	if _, err := admin.Exec(ctx, out.String()); err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, admin, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+role); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "SELECT fnonly.shout('x')")
		return err
	})
	if err != nil {
		t.Errorf("the granted role cannot run the statement's function: %v", err)
	}
}

// TestGrantsApply: --apply grants what grants prints, in one transaction,
// and says so.
func TestGrantsApply(t *testing.T) {
	ctx := context.Background()
	const demo = "../../testdata/demo/policy.yaml"
	dbURL := migrated(t)
	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	role := fmt.Sprintf("fencegw_apply_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP OWNED BY "+role)
		_, _ = admin.Exec(context.Background(), "DROP ROLE "+role)
	})
	var out bytes.Buffer
	if err := execute(ctx, &out, "grants", "--database-url", dbURL, "--policy", demo, "--role", role, "--apply"); err != nil {
		t.Fatal(err)
	}
	var canWrite, canFence bool
	if err := admin.QueryRow(ctx, "SELECT has_table_privilege($1, 'demo.accounts', 'UPDATE'), has_function_privilege($1, 'fencegw.fence(text, bigint, bigint, boolean, boolean)', 'EXECUTE')", role).Scan(&canWrite, &canFence); err != nil {
		t.Fatal(err)
	}
	if !canWrite || !canFence || !strings.Contains(out.String(), role+" has exactly what fencegw serve needs") {
		t.Fatalf("after grants --apply: update %v, fence %v, said %q", canWrite, canFence, out.String())
	}
}

// grantedRole creates a login role holding exactly what `fencegw grants`
// prints for policy on dbURL, dropped when the test ends, and returns a
// connection as the database's owner, the role's name and its URL.
func grantedRole(t *testing.T, dbURL, policy, prefix string) (admin *pgx.Conn, role, roleURL string) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	role = fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP OWNED BY "+role)
		_, _ = admin.Exec(context.Background(), "DROP ROLE "+role)
	})
	var grants bytes.Buffer
	if err := execute(ctx, &grants, "grants", "--database-url", dbURL, "--policy", policy, "--role", role); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, grants.String()); err != nil {
		t.Fatalf("the printed grants do not run: %v\n%s", err, &grants)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return admin, role, u.String()
}

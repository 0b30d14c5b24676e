package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// migrateUp runs `fencegw migrate up` on dbURL and returns what it printed.
func migrateUp(t *testing.T, dbURL string) string {
	t.Helper()
	var out strings.Builder
	if err := execute(context.Background(), &out, "migrate", "--database-url", dbURL, "up"); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestMigrateUpDefinesFunctionsOnce: `migrate up` prints each migration,
// then each function it defines; run again, it defines none.
func TestMigrateUpDefinesFunctionsOnce(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	out := migrateUp(t, dbURL)
	for _, want := range []string{"ran 1/u fences\n", "defined fencegw.fence\n", "defined fencegw.guard_row\n", "version: "} {
		if !strings.Contains(out, want) {
			t.Fatalf("first migrate up printed:\n%s\nwant %q in it", out, want)
		}
	}
	if strings.Index(out, "defined") < strings.LastIndex(out, "ran ") {
		t.Fatalf("first migrate up printed:\n%s\nwant the functions defined after the migrations", out)
	}
	if out := migrateUp(t, dbURL); strings.Contains(out, "ran ") || strings.Contains(out, "defined") {
		t.Fatalf("second migrate up printed:\n%s\nwant the version only", out)
	}
}

// TestServeRefusesFunctionsNotThisBinarys: serve does not start on a
// database whose fence is not the one this binary defines, and names it;
// `migrate up` defines it again, and that only.
func TestServeRefusesFunctionsNotThisBinarys(t *testing.T) {
	dbURL := migrated(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// A fence that refuses nothing.
	if _, err := conn.Exec(ctx, `CREATE OR REPLACE FUNCTION fencegw.fence(p_resource text, p_epoch bigint, p_token bigint, p_strict boolean, p_first boolean DEFAULT true)
		RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'`); err != nil {
		t.Fatal(err)
	}
	// Bounded: a serve that started anyway would run until its context ends.
	serveCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = serve(serveCtx, serveConfigFor(t, dbURL, "../../testdata/demo/policy.yaml"), nil)
	if want := "fencegw.fence differs from this binary's: run `fencegw migrate up`"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("serve with a fence edited by hand = %v, want %q", err, want)
	}
	if out := migrateUp(t, dbURL); strings.Count(out, "defined") != 1 || !strings.Contains(out, "defined fencegw.fence\n") {
		t.Fatalf("migrate up printed:\n%s\nwant fencegw.fence defined, and nothing else", out)
	}
}

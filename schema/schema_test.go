package schema_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/schema"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

func open(t *testing.T, dbURL string, src schema.Source) *schema.Migrator {
	t.Helper()
	m, err := schema.Open(dbURL, src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestUpTwiceIsANoOpAndDownReverts(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	m := open(t, dbURL, schema.Gateway())
	if _, _, err := m.Version(); !errors.Is(err, schema.ErrNoVersion) {
		t.Fatalf("Version on an empty database = %v, want ErrNoVersion", err)
	}
	latest, err := schema.Latest(schema.Gateway())
	if err != nil || latest < 1 {
		t.Fatalf("Latest = %d, %v", latest, err)
	}
	for i := range 2 {
		if err := m.Up(); err != nil {
			t.Fatalf("Up #%d: %v", i+1, err)
		}
		if v, dirty, err := m.Version(); v != latest || dirty || err != nil {
			t.Fatalf("after Up #%d: version %d dirty %t err %v; want %d", i+1, v, dirty, err, latest)
		}
	}
	conn := connect(t, dbURL)
	if v, dirty, err := schema.Applied(t.Context(), conn, schema.GatewayTable); v != latest || dirty || err != nil {
		t.Fatalf("Applied = %d %t %v, want %d", v, dirty, err, latest)
	}
	var n int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM fencegw.authority").Scan(&n); err != nil || n != 1 {
		t.Fatalf("authority rows = %d, %v; want 1 (seeded once, not twice)", n, err)
	}
	// One more than were applied: refused, and nothing is undone.
	count := gatewayMigrations(t)
	if err := m.Down(count + 1); err == nil || !strings.Contains(err.Error(), "nothing was undone") {
		t.Fatalf("Down(%d) after %d applied = %v, want a refusal that undoes nothing", count+1, count, err)
	}
	if v, dirty, err := m.Version(); v != latest || dirty || err != nil {
		t.Fatalf("after a refused Down: version %d dirty %t err %v; want %d", v, dirty, err, latest)
	}
	// Exactly as many: all are undone.
	if err := m.Down(count); err != nil {
		t.Fatalf("Down(%d) after %d applied = %v", count, count, err)
	}
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_namespace WHERE nspname = 'fencegw'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("fencegw schema still there after down: %d, %v", n, err)
	}
	if err := m.Down(0); err == nil {
		t.Fatal("Down(0) succeeded; want an error")
	}
}

// TestAppMigrationsKeepTheirOwnVersion applies an application's folder
// next to the gateway schema; each has its own version table.
func TestAppMigrationsKeepTheirOwnVersion(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	demo := schema.Dir("../testdata/demo/migrations", "demo_schema_migrations")
	for range 2 { // the second time, nothing to do
		if err := schema.Up(dbURL, schema.Gateway(), demo); err != nil {
			t.Fatal(err)
		}
	}
	if v, _, err := open(t, dbURL, schema.Gateway()).Version(); v < 1 || err != nil {
		t.Fatalf("gateway version = %d, %v", v, err)
	}
	latest, err := schema.Latest(demo)
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := open(t, dbURL, demo).Version(); v != latest || err != nil {
		t.Fatalf("demo version = %d, %v; want %d", v, err, latest)
	}
	var n int
	if err := connect(t, dbURL).QueryRow(t.Context(), "SELECT count(*) FROM demo.accounts").Scan(&n); err != nil || n != 100 {
		t.Fatalf("demo accounts = %d, %v; want 100", n, err)
	}
}

// TestDirtyStateNamesTheFix runs a migration that fails halfway and checks
// the error says the database is dirty and what to do.
func TestDirtyStateNamesTheFix(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	dir := t.TempDir()
	write := func(name, sql string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(sql), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("0001_ok.up.sql", "CREATE TABLE ok_table (id int);")
	write("0001_ok.down.sql", "DROP TABLE ok_table;")
	write("0002_broken.up.sql", "CREATE TABLE half (id int); SELECT no_such_function();")
	write("0002_broken.down.sql", "DROP TABLE IF EXISTS half;")
	m := open(t, dbURL, schema.Dir(dir, "app_versions"))
	if err := m.Up(); err == nil {
		t.Fatal("Up with a broken migration succeeded")
	}
	err := m.Up()
	if !errors.Is(err, schema.ErrDirty) || !strings.Contains(err.Error(), "fencegw migrate force") {
		t.Fatalf("Up on a dirty database = %v, want ErrDirty naming `fencegw migrate force`", err)
	}
	if v, dirty, _ := m.Version(); v != 2 || !dirty {
		t.Fatalf("version %d dirty %t, want 2 dirty", v, dirty)
	}
	if err := m.Force(3); err == nil || !strings.Contains(err.Error(), "no migration 3") {
		t.Fatalf("force 3, which does not exist = %v, want a refusal", err)
	}
	if v, dirty, _ := m.Version(); v != 2 || !dirty {
		t.Fatalf("after a refused force: version %d dirty %t, want 2 dirty, unchanged", v, dirty)
	}
	if err := m.Force(1); err != nil {
		t.Fatal(err)
	}
	if v, dirty, _ := m.Version(); v != 1 || dirty {
		t.Fatalf("after force 1: version %d dirty %t", v, dirty)
	}
	// force 0: none applied. up then starts from the first migration
	// (whose table exists here, so it fails there) instead of looking for
	// a migration 0.
	if err := m.Force(0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Version(); !errors.Is(err, schema.ErrNoVersion) {
		t.Fatalf("after force 0: %v, want no version", err)
	}
	if err := m.Up(); err == nil || !strings.Contains(err.Error(), "ok_table") {
		t.Fatalf("up after force 0 = %v, want it to run migration 1 again", err)
	}
}

func connect(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestVersionTableIgnoresSearchPath: for a role whose search_path finds the
// fencegw schema first (a role named fencegw), the version table must stay
// where it was, or the next `migrate up` would re-run migration 1.
func TestVersionTableIgnoresSearchPath(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	if err := open(t, dbURL, schema.Gateway()).Up(); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, dbURL)
	if _, err := conn.Exec(t.Context(), "ALTER DATABASE "+pgx.Identifier{conn.Config().Database}.Sanitize()+" SET search_path = fencegw, public"); err != nil {
		t.Fatal(err)
	}
	again := open(t, dbURL, schema.Gateway())
	if err := again.Up(); err != nil {
		t.Fatalf("second Up with fencegw first on the search_path: %v", err)
	}
	latest, _ := schema.Latest(schema.Gateway())
	if v, dirty, err := again.Version(); v != latest || dirty || err != nil {
		t.Fatalf("version %d dirty %t %v, want %d", v, dirty, err, latest)
	}
}

// TestEmptyFolderIsRefused: a folder without migrations (a wrong --dir) is
// named as such, before the database is touched: no version table is left.
func TestEmptyFolderIsRefused(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	_, err := schema.Open(dbURL, schema.Dir(t.TempDir(), "empty_schema_migrations"))
	if err == nil || !strings.Contains(err.Error(), "no migrations") {
		t.Fatalf("Open of an empty folder = %v, want it named as holding no migrations", err)
	}
	var table *string
	if err := connect(t, dbURL).QueryRow(t.Context(), "SELECT to_regclass('public.empty_schema_migrations')::text").Scan(&table); err != nil || table != nil {
		t.Fatalf("version table after the refusal: %v, %v; want none", table, err)
	}
}

// TestDownRefusesAFolderWithoutTheRecordedVersion: down through a folder
// that lacks the recorded version (a wrong --dir for the --table) is
// refused by name, and nothing is undone.
func TestDownRefusesAFolderWithoutTheRecordedVersion(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	if err := schema.Up(dbURL, schema.Gateway()); err != nil {
		t.Fatal(err)
	}
	latest, _ := schema.Latest(schema.Gateway())
	m, err := schema.Open(dbURL, schema.Dir("../testdata/demo/migrations", schema.GatewayTable))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Down(1); err == nil || !strings.Contains(err.Error(), "no migration in this folder") {
		t.Fatalf("Down(1) with the demo's folder on the gateway's table = %v, want the recorded version named as missing", err)
	}
	if v, dirty, err := schema.Applied(t.Context(), connect(t, dbURL), schema.GatewayTable); v != latest || dirty || err != nil {
		t.Fatalf("after the refusal: version %d dirty %t %v; want %d", v, dirty, err, latest)
	}
}

// gatewayMigrations counts the gateway's migrations, which is not always
// the latest version: branches number theirs apart before they merge, and
// one may skip a number another took.
func gatewayMigrations(t *testing.T) int {
	t.Helper()
	ups, err := fs.Glob(schema.Gateway().FS, "*.up.sql")
	if err != nil || len(ups) == 0 {
		t.Fatalf("gateway migrations: %v, %v", ups, err)
	}
	return len(ups)
}

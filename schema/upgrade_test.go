package schema_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/guard"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/schema"
)

// releasedMigrations are the gateway's migrations as released before the
// functions moved to definitions (commit a0161f9, versions 1 to 9), which
// created the databases in the field: each redefined the functions it
// changed. Kept as an archive so that they read as the fixture they are,
// not as code.
func releasedMigrations(t *testing.T) fstest.MapFS {
	t.Helper()
	f, err := os.Open("testdata/released-migrations.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := fstest.MapFS{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue // git archive's header naming the commit
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = &fstest.MapFile{Data: b}
	}
}

// releasedUpTo is the released migrations of versions 1 to k.
func releasedUpTo(t *testing.T, k int) schema.Source {
	t.Helper()
	upTo := fstest.MapFS{}
	for name, f := range releasedMigrations(t) {
		prefix, _, _ := strings.Cut(name, "_")
		if v, err := strconv.Atoi(prefix); err == nil && v <= k {
			upTo[name] = f
		}
	}
	return schema.Source{FS: upTo, Table: schema.GatewayTable}
}

// demoApp is the demo application's migrations, with their own table.
var demoApp = schema.Dir("../testdata/demo/migrations", "demo_schema_migrations")

// installGuard puts the demo policy's guard triggers on its tables.
func installGuard(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	pol, err := policy.Load("../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := guard.Install(context.Background(), conn, pol); err != nil {
		t.Fatal(err)
	}
}

// definitionsOf returns how the database holds each function of the
// fencegw schema: pg_get_functiondef and its privileges, by signature.
func definitionsOf(t *testing.T, conn *pgx.Conn) map[string]string {
	t.Helper()
	rows, err := conn.Query(t.Context(), `SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid) || E'\nprivileges: ' || coalesce(p.proacl::text, 'default')
		FROM pg_proc p WHERE p.pronamespace = 'fencegw'::regnamespace`)
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]string{}
	var sig, def string
	if _, err := pgx.ForEachRow(rows, []any{&sig, &def}, func() error { defs[sig] = def; return nil }); err != nil {
		t.Fatal(err)
	}
	return defs
}

// TestUpgradeFromEveryReleasedVersion: a database created by the released
// migrations up to any version, its demo tables guarded from version 3 on
// (the triggers depend on guard_row, which is replaced under them), is
// brought by Up to the latest version with exactly the functions a new
// database gets: each its file's body, no signature left behind (the
// four-argument fence), the same privileges. Fenced writes then work.
func TestUpgradeFromEveryReleasedVersion(t *testing.T) {
	fresh := testenv.NewDatabase(t)
	if err := schema.Up(fresh, schema.Gateway()); err != nil {
		t.Fatal(err)
	}
	want := definitionsOf(t, connect(t, fresh))
	latest, _ := schema.Latest(schema.Gateway())
	released, _ := schema.Latest(schema.Source{FS: releasedMigrations(t)})
	if released != 9 {
		t.Fatalf("the released migrations go up to version %d, want 9", released)
	}
	for k := 1; k <= int(released); k++ {
		t.Run(fmt.Sprintf("from version %d", k), func(t *testing.T) {
			dbURL := testenv.NewDatabase(t)
			conn := connect(t, dbURL)
			if err := schema.Up(dbURL, releasedUpTo(t, k)); err != nil {
				t.Fatal(err)
			}
			if k >= 3 {
				if err := schema.Up(dbURL, demoApp); err != nil {
					t.Fatal(err)
				}
				installGuard(t, conn)
			}
			if err := schema.Up(dbURL, schema.Gateway(), demoApp); err != nil {
				t.Fatalf("Up from released version %d: %v", k, err)
			}
			if k < 3 {
				installGuard(t, conn)
			}
			st, err := schema.ReadState(t.Context(), conn, schema.Gateway())
			if err != nil || st.Version != latest || st.Dirty || len(st.Differ) != 0 {
				t.Fatalf("after Up: %+v, %v; want version %d, nothing differing", st, err, latest)
			}
			checkFunctionsAreTheirFiles(t, conn)
			got := definitionsOf(t, conn)
			for sig, def := range want {
				if got[sig] != def {
					t.Errorf("%s differs from a new database's:\n%s\nwant\n%s", sig, got[sig], def)
				}
			}
			if len(got) != len(want) {
				t.Errorf("functions: %d, want %d as in a new database", len(got), len(want))
			}
			checkFencedWrites(t, dbURL, conn)
		})
	}
}

// TestDefinitionsAreTheReleasedFunctions: the definitions are the
// functions the released migrations left at version 9, declaration and
// privileges included, but for stamp_unfenced, whose body was rewritten
// (the same statements, not fence's lines copied): its privileges only;
// and fence, which checks the fence floor on a new row since version 13,
// and since version 16 runs with its owner's rights for the roles granted
// it alone (the gateway's role may not write the fences itself).
// addedSinceVersion9 are the functions the gateway has defined since the
// last release made by migrations alone.
var addedSinceVersion9 = []string{
	"fencegw.fence_session(bytea,text[],bigint[],bigint[],boolean[])",
	"fencegw.not_after(timestamp with time zone)",
	"fencegw.prune_fences(text,integer)",
	"fencegw.raise_fence_floor(bigint,bigint,text)",
	"fencegw.advance_fence(text,bigint,bigint,boolean)",
	"fencegw.trim_rejections()",
	"fencegw.trim_history()",
	"fencegw.refuse(text,text,text)",
	"fencegw.transaction_committed(text)",
	"fencegw.transaction_key(text)",
}

func TestDefinitionsAreTheReleasedFunctions(t *testing.T) {
	old, fresh := testenv.NewDatabase(t), testenv.NewDatabase(t)
	if err := schema.Up(old, releasedUpTo(t, 9)); err != nil {
		t.Fatal(err)
	}
	if err := schema.Up(fresh, schema.Gateway()); err != nil {
		t.Fatal(err)
	}
	was, is := definitionsOf(t, connect(t, old)), definitionsOf(t, connect(t, fresh))
	for _, sig := range addedSinceVersion9 {
		if _, ok := is[sig]; !ok {
			t.Errorf("%s, added since version 9, is not defined", sig)
		}
		delete(is, sig)
	}
	if len(was) != len(is) {
		t.Fatalf("%d functions, want %d as released", len(is), len(was))
	}
	for sig, def := range was {
		// Changed since: fence (forward only), settle_key (a replay
		// locks the key's row, to wait for a synchronous standby).
		if strings.HasPrefix(sig, "fencegw.fence(") || strings.HasPrefix(sig, "fencegw.settle_key(") {
			if _, ok := is[sig]; !ok {
				t.Errorf("%s is not defined", sig)
			}
			continue
		}
		if strings.HasPrefix(sig, "fencegw.stamp_unfenced(") {
			_, def, _ = strings.Cut(def, "\nprivileges: ")
			if _, got, _ := strings.Cut(is[sig], "\nprivileges: "); got != def {
				t.Errorf("%s: privileges %s, want %s as released", sig, got, def)
			}
			continue
		}
		if is[sig] != def {
			t.Errorf("%s differs from the released one:\n%s\nwant\n%s", sig, is[sig], def)
		}
	}
}

package schema_test

import (
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/schema"
)

// definitionFiles returns the gateway's definitions by function name
// (fence for fencegw.fence).
func definitionFiles(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, set := range schema.Gateway().Definitions {
		names, err := fs.Glob(set, "*.sql")
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			b, err := fs.ReadFile(set, n)
			if err != nil {
				t.Fatal(err)
			}
			files[strings.TrimSuffix(n, ".sql")] = string(b)
		}
	}
	return files
}

// dollarBody is what a file's function body is: the text between its
// first two $$, which PostgreSQL keeps as pg_proc.prosrc.
func dollarBody(sql string) string {
	_, rest, _ := strings.Cut(sql, "$$")
	body, _, _ := strings.Cut(rest, "$$")
	return body
}

// function is one function of the fencegw schema as the database holds it.
type function struct {
	name, signature, src, def string
	publicExecute             bool // PUBLIC may call it
}

// functions returns every function of the fencegw schema.
func functions(t *testing.T, conn *pgx.Conn) []function {
	t.Helper()
	rows, err := conn.Query(t.Context(), `SELECT p.proname, p.oid::regprocedure::text, p.prosrc, pg_get_functiondef(p.oid),
			p.proacl IS NULL OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) a WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE')
		FROM pg_proc p WHERE p.pronamespace = 'fencegw'::regnamespace ORDER BY 2`)
	if err != nil {
		t.Fatal(err)
	}
	fns, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (function, error) {
		var f function
		return f, r.Scan(&f.name, &f.signature, &f.src, &f.def, &f.publicExecute)
	})
	if err != nil {
		t.Fatal(err)
	}
	return fns
}

// notPublic are the functions only roles granted EXECUTE may call: the
// bypass and the unfenced stamp (operators'), and those that change the
// fences, the floor, the audit and the history with their owner's rights
// (the gateway's role's, `fencegw grants`).
var notPublic = []string{"bypass", "stamp_unfenced",
	"fence", "advance_fence", "raise_fence_floor", "prune_fences", "trim_rejections", "trim_history"}

// checkFunctionsAreTheirFiles fails t unless the fencegw schema holds one
// function per definition file, each with its file's body, and PUBLIC may
// call all but notPublic.
func checkFunctionsAreTheirFiles(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	files := definitionFiles(t)
	var names []string
	for _, f := range functions(t, conn) {
		names = append(names, f.name)
		if want := dollarBody(files[f.name]); f.src != want {
			t.Errorf("%s: the database's body differs from its file's:\n%s\nwant\n%s", f.signature, f.src, want)
		}
		if want := !slices.Contains(notPublic, f.name); f.publicExecute != want {
			t.Errorf("%s: PUBLIC may call it: %t, want %t", f.signature, f.publicExecute, want)
		}
	}
	slices.Sort(names)
	if want := slices.Sorted(maps.Keys(files)); !slices.Equal(names, want) {
		t.Errorf("functions in fencegw: %v; want one per file: %v", names, want)
	}
}

// TestGatewayFunctionsAreTheirFiles: after Up, the gateway's functions are
// exactly its definition files, and with the privileges they had when
// migrations defined them.
func TestGatewayFunctionsAreTheirFiles(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	if err := schema.Up(dbURL, schema.Gateway()); err != nil {
		t.Fatal(err)
	}
	checkFunctionsAreTheirFiles(t, connect(t, dbURL))
	if len(definitionFiles(t)) < 9 {
		t.Fatalf("definition files: %v; want fence's and guard's, 9 or more", slices.Sorted(maps.Keys(definitionFiles(t))))
	}
}

// TestGatewayDownThenUp: migrations down (some of them, or all: the schema
// dropped), then up, leave the functions as their files define them.
func TestGatewayDownThenUp(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	m := open(t, dbURL, schema.Gateway())
	if err := m.Up(); err != nil {
		t.Fatal(err)
	}
	latest, _ := schema.Latest(schema.Gateway())
	for _, n := range []int{gatewayMigrations(t) - 2, gatewayMigrations(t)} {
		if err := m.Down(n); err != nil {
			t.Fatalf("Down(%d): %v", n, err)
		}
		if err := m.Up(); err != nil {
			t.Fatalf("Up after Down(%d): %v", n, err)
		}
		if v, dirty, err := m.Version(); v != latest || dirty || err != nil {
			t.Fatalf("after Down(%d) and Up: version %d dirty %t %v; want %d", n, v, dirty, err, latest)
		}
		checkFunctionsAreTheirFiles(t, connect(t, dbURL))
	}
}

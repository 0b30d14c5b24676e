package schema_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/schema"
)

// TestReadStateNamesWhatDiffers: start-up and readiness read, in one
// statement, the version and the functions the database holds otherwise
// than the binary's files: edited by hand, dropped, an overload more, or
// not defined by this binary at all (a file changed since). Up repairs
// each, and then none differs.
func TestReadStateNamesWhatDiffers(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	conn := connect(t, dbURL)
	src := schema.Gateway()
	if _, err := schema.ReadState(t.Context(), conn, src); !errors.Is(err, schema.ErrNoVersion) {
		t.Fatalf("ReadState of an empty database = %v, want ErrNoVersion", err)
	}
	if err := schema.Up(dbURL, src); err != nil {
		t.Fatal(err)
	}
	latest, _ := schema.Latest(src)
	st, err := schema.ReadState(t.Context(), conn, src)
	if err != nil || st.Version != latest || st.Dirty || len(st.Differ) != 0 || st.DefinitionsDiffer() != "" {
		t.Fatalf("ReadState after Up = %+v, %v; want version %d and nothing differing", st, err, latest)
	}
	for _, tt := range []struct {
		name string
		src  schema.Source
		sql  string
		want []string
	}{
		{"fence edited by hand", src, `CREATE OR REPLACE FUNCTION fencegw.fence(p_resource text, p_epoch bigint, p_token bigint, p_strict boolean, p_first boolean DEFAULT true)
			RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'`, []string{"fencegw.fence"}},
		{"guard_row's search_path reset", src, "ALTER FUNCTION fencegw.guard_row() RESET search_path", []string{"fencegw.guard_row"}},
		{"claim_key and settle_key dropped", src, "DROP FUNCTION fencegw.claim_key(text, text, text, bytea, interval); DROP FUNCTION fencegw.settle_key(text, text, text, bytea, interval, int, bytea)",
			[]string{"fencegw.claim_key", "fencegw.settle_key"}},
		{"the old fence back", src, "CREATE FUNCTION fencegw.fence(text, bigint, bigint, boolean) RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'", []string{"fencegw.fence"}},
		{"a binary with another probe", withDefinitions(probe("1")), "", []string{"fencegw.probe"}},
	} {
		if tt.sql != "" {
			if _, err := conn.Exec(t.Context(), tt.sql); err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
		}
		st, err := schema.ReadState(t.Context(), conn, tt.src)
		if err != nil || st.Version != latest || !slices.Equal(st.Differ, tt.want) {
			t.Fatalf("%s: ReadState = %+v, %v; want version %d, %v differing", tt.name, st, err, latest, tt.want)
		}
		if d, want := st.DefinitionsDiffer(), strings.Join(tt.want, ", "); !strings.HasPrefix(d, want+" differ") || !strings.HasSuffix(d, "from this binary's: run `fencegw migrate up`") {
			t.Fatalf("%s: DefinitionsDiffer() = %q, want %s named and `fencegw migrate up`", tt.name, d, want)
		}
		if err := schema.Up(dbURL, tt.src); err != nil {
			t.Fatalf("%s: Up: %v", tt.name, err)
		}
		if st, err := schema.ReadState(t.Context(), conn, tt.src); err != nil || len(st.Differ) != 0 {
			t.Fatalf("%s, then Up: ReadState = %+v, %v; want nothing differing", tt.name, st, err)
		}
	}
}

// TestReadStateWithoutDefinitionsTable: a database migrated by a binary
// older than definitions (its table missing) reads as every function
// differing, with its version.
func TestReadStateWithoutDefinitionsTable(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	if err := schema.Up(dbURL, schema.Gateway()); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, dbURL)
	if _, err := conn.Exec(t.Context(), "DROP TABLE public."+schema.DefinitionsTable); err != nil {
		t.Fatal(err)
	}
	latest, _ := schema.Latest(schema.Gateway())
	st, err := schema.ReadState(t.Context(), conn, schema.Gateway())
	if err != nil || st.Version != latest || len(st.Differ) != len(definitionFiles(t)) {
		t.Fatalf("ReadState = %+v, %v; want version %d and all %d functions differing", st, err, latest, len(definitionFiles(t)))
	}
}

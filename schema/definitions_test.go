package schema_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/schema"
)

// probe is a definition set of one function, fencegw.probe, returning n.
func probe(n string) fstest.MapFS {
	return fstest.MapFS{"probe.sql": {Data: []byte(`-- probe says which definition the database holds.
CREATE OR REPLACE FUNCTION fencegw.probe() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    RETURN ` + n + `;
END
$$;
`)}}
}

// withDefinitions is the gateway's schema with sets added to its
// definitions.
func withDefinitions(sets ...fstest.MapFS) schema.Source {
	src := schema.Gateway()
	for _, s := range sets {
		src.Definitions = append(src.Definitions, s)
	}
	return src
}

// up runs Up of src and returns what it reported.
func up(t *testing.T, dbURL string, src schema.Source) (string, error) {
	t.Helper()
	m := open(t, dbURL, src)
	var out strings.Builder
	m.Report(&out)
	err := m.Up()
	return out.String(), err
}

func probed(t *testing.T, dbURL string) string {
	t.Helper()
	var n string
	if err := connect(t, dbURL).QueryRow(t.Context(), "SELECT fencegw.probe()::text").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDefinitionAppliedOnceAndAgainWhenItChanges: a definition is applied
// by the first Up, not by the next, and once more when its file changes.
func TestDefinitionAppliedOnceAndAgainWhenItChanges(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	steps := []struct {
		name, probe string
		want        bool // reported "defined fencegw.probe"
	}{
		{"first up", "1", true},
		{"second up, nothing changed", "1", false},
		{"the file changed", "2", true},
		{"up again", "2", false},
	}
	for _, st := range steps {
		out, err := up(t, dbURL, withDefinitions(probe(st.probe)))
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := strings.Contains(out, "defined fencegw.probe\n"); got != st.want {
			t.Fatalf("%s: reported %q; want defined fencegw.probe: %t", st.name, out, st.want)
		}
		if !st.want && strings.Contains(out, "defined") {
			t.Fatalf("%s: reported %q; want nothing defined", st.name, out)
		}
		if got := probed(t, dbURL); got != st.probe {
			t.Fatalf("%s: fencegw.probe() = %s, want %s", st.name, got, st.probe)
		}
	}
}

// TestDefinitionRepairedWhenTheDatabaseDiffers: a function edited by hand
// or dropped (as a down migration may) is defined again by the next Up.
func TestDefinitionRepairedWhenTheDatabaseDiffers(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	src := withDefinitions(probe("1"))
	if _, err := up(t, dbURL, src); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, sql string }{
		{"edited", "CREATE OR REPLACE FUNCTION fencegw.probe() RETURNS int LANGUAGE sql AS 'SELECT 7'"},
		{"made SECURITY DEFINER", "ALTER FUNCTION fencegw.probe() SECURITY DEFINER"},
		{"dropped", "DROP FUNCTION fencegw.probe()"},
	} {
		if _, err := connect(t, dbURL).Exec(t.Context(), tt.sql); err != nil {
			t.Fatal(err)
		}
		out, err := up(t, dbURL, src)
		if err != nil || out != "defined fencegw.probe\n" {
			t.Fatalf("%s: Up reported %q, %v; want defined fencegw.probe and nothing else", tt.name, out, err)
		}
		if got := probed(t, dbURL); got != "1" {
			t.Fatalf("%s, then Up: fencegw.probe() = %s, want 1", tt.name, got)
		}
	}
}

// TestDefinitionRefusalUndoesEveryDefinition: a file that creates no
// function of its name, or an overload no file defines, fails Up by name,
// and no definition of that Up is applied or recorded.
func TestDefinitionRefusalUndoesEveryDefinition(t *testing.T) {
	for _, tt := range []struct{ name, byHand, want string }{
		{"a file defining another name", "", "creates no function fencegw.wrong"},
		{"an overload made by hand", "CREATE FUNCTION fencegw.probe(int) RETURNS int LANGUAGE sql AS 'SELECT 9'",
			"fencegw.probe(integer) is not this binary's"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dbURL := testenv.NewDatabase(t)
			if _, err := up(t, dbURL, withDefinitions(probe("1"))); err != nil {
				t.Fatal(err)
			}
			sets := []fstest.MapFS{probe("2")}
			if tt.byHand != "" {
				if _, err := connect(t, dbURL).Exec(t.Context(), tt.byHand); err != nil {
					t.Fatal(err)
				}
			} else {
				sets = append(sets, fstest.MapFS{"wrong.sql": {Data: []byte("CREATE OR REPLACE FUNCTION fencegw.other() RETURNS int LANGUAGE sql AS 'SELECT 1';")}})
			}
			out, err := up(t, dbURL, withDefinitions(sets...))
			if err == nil || !strings.Contains(err.Error(), tt.want) || out != "" {
				t.Fatalf("Up = %q, %v; want an error saying %q and nothing reported", out, err, tt.want)
			}
			if got := probed(t, dbURL); got != "1" {
				t.Fatalf("after the refusal, fencegw.probe() = %s; want 1, the earlier definition", got)
			}
			var other *string
			if err := connect(t, dbURL).QueryRow(t.Context(), "SELECT to_regprocedure('fencegw.other()')::text").Scan(&other); err != nil || other != nil {
				t.Fatalf("after the refusal, fencegw.other() = %v, %v; want none", other, err)
			}
		})
	}
}

// TestDefinitionsOfConcurrentUps: replicas running up at once on a new
// database all succeed, and each definition is applied once.
func TestDefinitionsOfConcurrentUps(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	src := withDefinitions(probe("1"))
	var wg sync.WaitGroup
	outs, errs := make([]string, 4), make([]error, 4)
	for i := range outs {
		wg.Go(func() {
			m, err := schema.Open(dbURL, src)
			if err != nil {
				errs[i] = err
				return
			}
			defer m.Close()
			var out strings.Builder
			m.Report(&out)
			errs[i], outs[i] = m.Up(), out.String()
		})
	}
	wg.Wait()
	defined := 0
	for i := range outs {
		if errs[i] != nil {
			t.Fatalf("Up #%d: %v", i, errs[i])
		}
		defined += strings.Count(outs[i], "defined fencegw.probe\n")
	}
	if defined != 1 {
		t.Fatalf("fencegw.probe defined %d times by 4 concurrent Ups; want 1", defined)
	}
}

// TestDefinitionFilesAreNamedForTheirFunction: a file name that is no
// function's, or one function in two sets, is refused before anything is
// migrated or defined.
func TestDefinitionFilesAreNamedForTheirFunction(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	for _, tt := range []struct {
		name string
		sets []fstest.MapFS
		want string
	}{
		{"upper case", []fstest.MapFS{{"Probe.sql": {Data: []byte("SELECT 1")}}}, `"Probe.sql": want the function's name`},
		{"a dot", []fstest.MapFS{{"fencegw.probe.sql": {Data: []byte("SELECT 1")}}}, "want the function's name"},
		{"twice", []fstest.MapFS{probe("1"), probe("2")}, "fencegw.probe is defined twice"},
	} {
		_, err := up(t, dbURL, withDefinitions(tt.sets...))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Fatalf("%s: Up = %v, want %q", tt.name, err, tt.want)
		}
	}
	if v, _, err := open(t, dbURL, schema.Gateway()).Version(); !errors.Is(err, schema.ErrNoVersion) {
		t.Fatalf("version after the refusals: %d, %v; want none applied", v, err)
	}
	var table *string
	if err := connect(t, dbURL).QueryRow(t.Context(), "SELECT to_regclass($1)::text", "public."+schema.DefinitionsTable).Scan(&table); err != nil || table != nil {
		t.Fatalf("definitions table after the refusals: %v, %v; want none", table, err)
	}
}

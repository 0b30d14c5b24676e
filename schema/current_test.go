package schema_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/devserver/pgcluster"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/schema"
)

var update = flag.Bool("update", false, "rewrite schema/current.sql from a freshly migrated database")

// TestCurrentSchema: schema/current.sql is what the migrations make of
// an empty database, so that what fencegw.fences looks like is read in
// one file, not in four migrations in order. It fails when a migration
// changes a table and the file was not made again (-update).
func TestCurrentSchema(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	if err := schema.Up(dbURL, schema.Gateway()); err != nil {
		t.Fatal(err)
	}
	got := currentSchema(t, dbURL)
	if *update {
		if err := os.WriteFile("current.sql", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("current.sql")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("schema/current.sql is not what the migrations make: run go test ./schema -run TestCurrentSchema -update\n%s", firstDifference(string(want), string(got)))
	}
}

// currentSchemaHeader opens current.sql.
const currentSchemaHeader = `-- The gateway's schema (fencegw.*) as its migrations leave it: tables,
-- sequences, indexes and constraints, in pg_dump's order. Generated; do not
-- edit: go test ./schema -run TestCurrentSchema -update. The migrations
-- (schema/migrations) are its history; the functions' current bodies live
-- beside the Go that calls them (fence/sql, guard/sql).
`

// currentSchema is pg_dump's schema-only dump of fencegw.* in dbURL, less
// what varies by server or by dump (the version, its session settings, a
// random restrict key) and less the functions, which are current in their
// own files.
func currentSchema(t *testing.T, dbURL string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bin, err := pgcluster.FindBinDir(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "pg_dump"), "--schema-only", "--schema=fencegw",
		"--no-owner", "--no-privileges", "--dbname="+dbURL).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	var b strings.Builder
	b.WriteString(currentSchemaHeader)
	for _, block := range dumpBlocks(string(out)) {
		if strings.Contains(block, "; Type: FUNCTION;") {
			continue
		}
		b.WriteString("\n" + block)
	}
	return []byte(b.String())
}

// dumpHeader starts each object of a dump: "--\n-- Name: …; Type: …".
var dumpHeader = regexp.MustCompile(`(?m)^--\n-- Name: `)

// dumpBlocks splits a dump into its objects, each from its header to the
// next, dropping the preamble and the dump's own closing lines.
func dumpBlocks(dump string) []string {
	starts := dumpHeader.FindAllStringIndex(dump, -1)
	var blocks []string
	for i, s := range starts {
		end := len(dump)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		block := dump[s[0]:end]
		var keep []string
		for _, line := range strings.Split(block, "\n") {
			if strings.HasPrefix(line, `\unrestrict`) || line == "-- PostgreSQL database dump complete" {
				continue
			}
			keep = append(keep, line)
		}
		blocks = append(blocks, strings.TrimRight(strings.Join(keep, "\n"), "\n")+"\n")
	}
	return blocks
}

// firstDifference quotes the first line where want and got part.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n  file:       " + wl + "\n  migrations: " + gl
		}
	}
	return ""
}

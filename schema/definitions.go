package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
)

// A definition is the current SQL of one function, kept beside the Go that
// calls it (fence/sql/fence.sql) instead of in the migration that last
// changed it. A versioned migration runs once and is history; a definition
// is what this binary wants the database to hold, and Up applies it again
// whenever the database holds something else: the file changed, a down
// migration dropped the function, someone edited it by hand.
//
// A file is idempotent SQL: CREATE OR REPLACE FUNCTION, its REVOKEs, and
// DROP FUNCTION IF EXISTS of signatures it replaces (CREATE OR REPLACE
// cannot change a result type or parameter names). It never drops the
// function it defines: triggers depend on the guard's, and operators'
// GRANTs on fencegw.bypass would go with it.

// DefinitionsTable records, next to the version table, which file defined
// each function and what the database held right after: the database
// holds a function as a file makes it when a row of that file's checksum
// has the checksum of what the database holds now.
const DefinitionsTable = "fencegw_schema_definitions"

// definitionSchema is the schema every definition's function lives in.
const definitionSchema = "fencegw"

// definition is one file of a Source's Definitions.
type definition struct {
	name string // the function: fencegw.fence for fence.sql
	sql  string
	sum  string // SHA-256 of sql, in hex
}

// definitionFile is a definition's file name: the function's, lower case.
var definitionFile = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}\.sql$`)

// loadDefinitions reads the *.sql files at the top of each of sets. A name
// defined twice, or a file named otherwise than a function, is refused.
func loadDefinitions(sets []fs.FS) ([]definition, error) {
	var defs []definition
	seen := map[string]bool{}
	for _, set := range sets {
		files, err := fs.Glob(set, "*.sql")
		if err != nil {
			return nil, fmt.Errorf("schema: read definitions: %w", err)
		}
		for _, f := range files {
			if !definitionFile.MatchString(f) {
				return nil, fmt.Errorf("schema: definition %q: want the function's name, lower case, then .sql", f)
			}
			name := definitionSchema + "." + strings.TrimSuffix(f, ".sql")
			if seen[name] {
				return nil, fmt.Errorf("schema: %s is defined twice", name)
			}
			seen[name] = true
			b, err := fs.ReadFile(set, f)
			if err != nil {
				return nil, fmt.Errorf("schema: read definition %s: %w", f, err)
			}
			sum := sha256.Sum256(b)
			defs = append(defs, definition{name: name, sql: string(b), sum: hex.EncodeToString(sum[:])})
		}
	}
	return defs, nil
}

// heldSum is SQL for what the database holds under the function name
// (qualified) that the SQL expression name evaluates to: every function of
// that name, as pg_get_functiondef prints it (arguments, result, language,
// volatility, SECURITY DEFINER, SET options and body), hashed; NULL if
// there is none. An overload left behind changes it too. Grants are left
// out: operators grant EXECUTE on fencegw.bypass to roles of their own.
func heldSum(name string) string {
	return `(SELECT encode(sha256(convert_to(string_agg(pg_catalog.pg_get_functiondef(p.oid), E'\n'
			ORDER BY pg_catalog.pg_get_function_identity_arguments(p.oid)), 'UTF8')), 'hex')
		FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = split_part(` + name + `, '.', 1) AND p.proname = split_part(` + name + `, '.', 2)
		  AND p.prokind <> 'a')`
}

// notHeldSQL returns, of the names and file checksums in $1 and $2, the
// names the database does not hold as those files make them.
var notHeldSQL = `SELECT f.name FROM unnest($1::text[], $2::text[]) AS f(name, file_sha256)
	WHERE NOT EXISTS (SELECT 1 FROM ` + definitionsTable + ` d
		WHERE d.name = f.name AND d.file_sha256 = f.file_sha256 AND d.sql_sha256 = ` + heldSum("f.name") + `)
	ORDER BY f.name`

// definitionsTable is DefinitionsTable, qualified.
var definitionsTable = VersionSchema + "." + DefinitionsTable

// namesAndSums are the arguments of notHeldSQL.
func namesAndSums(defs []definition) (names, sums []string) {
	names, sums = make([]string, len(defs)), make([]string, len(defs))
	for i, d := range defs {
		names[i], sums[i] = d.name, d.sum
	}
	return names, sums
}

package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestGuardedTables(t *testing.T) {
	p := mustParse(t, goodPolicy+`
guarded_tables:
  app.jobs:
    resource: job
    columns: {day: run_day, n: seq}
  app.accounts:
    resource: account
    columns: {account: id}
`)
	if len(p.Guarded) != 2 || p.Guarded[0].Table != "app.accounts" || p.Guarded[1].Table != "app.jobs" {
		t.Fatalf("Guarded = %+v, want app.accounts then app.jobs", p.Guarded)
	}
	want := []KeyPart{{Literal: "job/"}, {Column: "run_day"}, {Literal: "/"}, {Column: "seq"}}
	if got := p.Guarded[1].KeyParts(); !slices.Equal(got, want) {
		t.Errorf("KeyParts = %+v, want %+v", got, want)
	}
	if d := p.Describe(); !strings.Contains(d, "guarded table app.jobs: rows of job, key job/{run_day}/{seq}") {
		t.Errorf("Describe lacks the guarded table:\n%s", d)
	}
}

func TestGuardedTablesErrorsNameTheEntry(t *testing.T) {
	for _, tt := range []struct{ name, guarded, entry, msg string }{
		{"no schema", "  accounts: {resource: account, columns: {account: id}}\n", "guarded_tables.accounts", "schema.table"},
		{"quoted name", "  'app.\"Accounts\"': {resource: account, columns: {account: id}}\n", `guarded_tables.app."Accounts"`, "lower-case"},
		{"fencegw's own table", "  fencegw.bypass_log: {resource: account, columns: {account: why}}\n", "guarded_tables.fencegw.bypass_log", "not an application's"},
		{"unknown kind", "  app.accounts: {resource: acct, columns: {account: id}}\n", "guarded_tables.app.accounts.resource", "not a declared kind"},
		{"key argument without a column", "  app.jobs: {resource: job, columns: {day: d}}\n", "guarded_tables.app.jobs.columns", "no column for {n}"},
		{"column for no argument", "  app.accounts: {resource: account, columns: {account: id, other: x}}\n", "guarded_tables.app.accounts.columns.other", "has no {other}"},
		{"bad column name", "  app.accounts: {resource: account, columns: {account: 'id; DROP TABLE x'}}\n", "guarded_tables.app.accounts.columns.account", "column name"},
		{"unknown key", "  app.accounts: {resource: account, column: {account: id}}\n", "", "column"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(goodPolicy+"guarded_tables:\n"+tt.guarded))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error = %v, want *Error", err)
			}
			for _, p := range pe.Problems {
				if p.Entry == tt.entry && strings.Contains(p.Message, tt.msg) {
					return
				}
			}
			t.Fatalf("problems %+v\nwant entry %q with %q", pe.Problems, tt.entry, tt.msg)
		})
	}
}

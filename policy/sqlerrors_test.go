package policy_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/policy"
)

func demoWith(t *testing.T, section string) []byte {
	t.Helper()
	src, err := os.ReadFile("../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return append(src, []byte("\n"+section)...)
}

// TestSQLErrors: sql_errors map SQLSTATEs to 4xx problems; the PT class
// maps itself; fencegw's own FG class, 5xx statuses, malformed codes and
// types are refused, each named.
func TestSQLErrors(t *testing.T) {
	p, err := policy.Parse("p.yaml", demoWith(t, "sql_errors:\n  P0001: {status: 409, type: over-reserved, message: true}\n  \"42501\": {status: 403, type: not-permitted}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for code, want := range map[string]policy.SQLErrorMapping{
		"P0001": {Status: 409, Kind: "over-reserved", Message: true},
		"42501": {Status: 403, Kind: "not-permitted"},
		"PT418": {Status: 418, Kind: "application", Message: true},
	} {
		if got, ok := p.SQLError(code); !ok || got != want {
			t.Errorf("SQLError(%s) = %+v, %v; want %+v", code, got, ok, want)
		}
	}
	for _, code := range []string{"PT500", "PT399", "PTabc", "23505", "P0002"} {
		if m, ok := p.SQLError(code); ok {
			t.Errorf("SQLError(%s) = %+v, want unmapped", code, m)
		}
	}
	if !strings.Contains(p.Describe(), "P0001 -> 409 urn:fencegw:problem:over-reserved") {
		t.Errorf("Describe does not show the mapping:\n%s", p.Describe())
	}

	_, err = policy.Parse("p.yaml", demoWith(t, `sql_errors:
  p0001: {status: 409, type: x}
  FG409: {status: 409, type: stale}
  P0001: {status: 503, type: busy}
  P0002: {status: 409, type: "Not Good"}
  "40001": {status: 409, type: busy}
  P0003: {status: 409, type: stale-token}
`))
	var perr *policy.Error
	if !errors.As(err, &perr) {
		t.Fatalf("bad sql_errors: %v", err)
	}
	var entries []string
	for _, pr := range perr.Problems {
		entries = append(entries, pr.Entry)
	}
	want := "sql_errors.40001 sql_errors.FG409 sql_errors.P0001.status sql_errors.P0002.type sql_errors.P0003.type sql_errors.p0001"
	if strings.Join(entries, " ") != want {
		t.Errorf("problems at %v, want %s\n%v", entries, want, err)
	}
}

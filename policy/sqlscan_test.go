package policy

import (
	"slices"
	"strings"
	"testing"
)

func TestScanSQL(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		want      string
		params    []string
		returning bool
		err       string
	}{
		{name: "params numbered in order, repeats share a number",
			in:   "UPDATE t SET a = a - :amt WHERE id = :id AND a >= :amt",
			want: "UPDATE t SET a = a - $1 WHERE id = $2 AND a >= $1", params: []string{"amt", "id"}},
		{name: "cast is not a param", in: "SELECT :x::bigint", want: "SELECT $1::bigint", params: []string{"x"}},
		{name: "string literal untouched", in: "SELECT ':no', :yes", want: "SELECT ':no', $1", params: []string{"yes"}},
		{name: "doubled quote in string", in: "SELECT 'it''s :no', :yes", want: "SELECT 'it''s :no', $1", params: []string{"yes"}},
		{name: "E string backslash", in: `SELECT E'\' :no', :yes`, want: `SELECT E'\' :no', $1`, params: []string{"yes"}},
		{name: "quoted identifier", in: `SELECT ":no" FROM t WHERE a = :yes`, want: `SELECT ":no" FROM t WHERE a = $1`, params: []string{"yes"}},
		{name: "line comment", in: "SELECT :yes -- :no\n", want: "SELECT $1 -- :no", params: []string{"yes"}},
		{name: "nested block comment", in: "SELECT /* a /* :no */ :no */ :yes", want: "SELECT /* a /* :no */ :no */ $1", params: []string{"yes"}},
		{name: "dollar quote", in: "SELECT $x$ :no $x$, $$ :no $$, :yes", want: "SELECT $x$ :no $x$, $$ :no $$, $1", params: []string{"yes"}},
		{name: "trailing semicolon dropped", in: "DELETE FROM t WHERE id = :id; -- done", want: "DELETE FROM t WHERE id = $1", params: []string{"id"}},
		{name: "returning at top level", in: "UPDATE t SET a = 1 RETURNING a", want: "UPDATE t SET a = 1 RETURNING a", returning: true},
		{name: "returning in a string is not", in: "UPDATE t SET a = 'RETURNING'", want: "UPDATE t SET a = 'RETURNING'"},
		{name: "returning in a subquery is not", in: "INSERT INTO t SELECT * FROM (SELECT returning FROM u) s", want: "INSERT INTO t SELECT * FROM (SELECT returning FROM u) s"},
		{name: "builtins", in: "INSERT INTO log VALUES (:_resource, :_token)", want: "INSERT INTO log VALUES ($1, $2)", params: []string{"_resource", "_token"}},
		{name: "two statements", in: "DELETE FROM t; DELETE FROM u", err: "one SQL statement"},
		{name: "positional param", in: "DELETE FROM t WHERE id = $1", err: "positional"},
		{name: "unterminated string", in: "SELECT 'abc", err: "unterminated"},
		{name: "unterminated comment", in: "SELECT /* abc", err: "unterminated"},
		{name: "unterminated dollar", in: "SELECT $a$ abc", err: "unterminated"},
		{name: "empty", in: "  -- nothing\n", err: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := scanSQL(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("scanSQL(%q) error = %v, want one containing %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("scanSQL(%q): %v", tt.in, err)
			}
			if got.sql != tt.want || !slices.Equal(got.params, tt.params) || got.returning != tt.returning {
				t.Fatalf("scanSQL(%q) = %q %q returning=%t\nwant %q %q returning=%t", tt.in, got.sql, got.params, got.returning, tt.want, tt.params, tt.returning)
			}
		})
	}
}

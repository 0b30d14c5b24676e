package sqlfront

import (
	"strings"
	"testing"
)

// TestSplitStatements: semicolons inside strings, identifiers, comments,
// dollar quotes, parentheses and a BEGIN ATOMIC body end no statement.
func TestSplitStatements(t *testing.T) {
	for _, tc := range []struct {
		name, sql string
		want      []string
	}{
		{"plain", "BEGIN; SELECT 1;COMMIT", []string{"BEGIN", " SELECT 1", "COMMIT"}},
		{"empty ones dropped", ";; SELECT 1; -- c\n;", []string{" SELECT 1"}},
		{"strings", `SELECT 'a;b', E'c\';d', "e;f"; SELECT 2`, []string{`SELECT 'a;b', E'c\';d', "e;f"`, " SELECT 2"}},
		{"comments", "SELECT /* a; /* b; */ c; */ 1 -- d;\n; SELECT 2", []string{"SELECT /* a; /* b; */ c; */ 1", " SELECT 2"}},
		{"dollar quotes", "DO $x$ BEGIN PERFORM 1; END $x$; SELECT $$;$$", []string{"DO $x$ BEGIN PERFORM 1; END $x$", " SELECT $$;$$"}},
		{"parameters are no quotes", "SELECT $1; SELECT $2", []string{"SELECT $1", " SELECT $2"}},
		{"parentheses", "CREATE RULE r AS ON INSERT TO t DO ALSO (INSERT INTO u VALUES (1); INSERT INTO v VALUES (2)); SELECT 1",
			[]string{"CREATE RULE r AS ON INSERT TO t DO ALSO (INSERT INTO u VALUES (1); INSERT INTO v VALUES (2))", " SELECT 1"}},
		{"begin atomic", "CREATE FUNCTION f() RETURNS int BEGIN ATOMIC SELECT 1; SELECT 2; END; SELECT 3",
			[]string{"CREATE FUNCTION f() RETURNS int BEGIN ATOMIC SELECT 1; SELECT 2; END", " SELECT 3"}},
		{"unterminated", "SELECT 'a; SELECT 2", []string{"SELECT 'a; SELECT 2"}},
	} {
		var got []string
		for _, st := range splitStatements(tc.sql, true) {
			got = append(got, tc.sql[st.start:st.end])
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestClassify: the front answers the two forms that name fences,
// refuses what it cannot relay and every other use of fencegw.tokens or
// fencegw.* settings, and sends the rest on.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		sql       string
		kind      stmtKind
		value     string
		param     int
		code      string // stRefused
		setConfig bool
	}{
		{sql: "SET LOCAL fencegw.tokens = 'account/acct-1=1:7'", kind: stTokens, value: "account/acct-1=1:7"},
		{sql: `set local "fencegw"."tokens" to 'a=1:2, b=1:3'`, kind: stTokens, value: "a=1:2, b=1:3"},
		{sql: "SELECT set_config('fencegw.tokens', 'a=1:2', true)", kind: stTokens, value: "a=1:2", setConfig: true},
		{sql: "select pg_catalog.set_config('fencegw.tokens', $1::text, 't')", kind: stTokens, param: 1, setConfig: true},
		{sql: "SELECT set_config('fencegw.tokens', $2, TRUE)", kind: stTokens, param: 2, setConfig: true},
		{sql: "SET fencegw.tokens = 'a=1:2'", kind: stRefused, code: codeBadTokens},
		{sql: "SET SESSION fencegw.tokens = 'a=1:2'", kind: stRefused, code: codeBadTokens},
		{sql: "SELECT set_config('fencegw.tokens', 'a=1:2', false)", kind: stRefused, code: codeBadTokens},
		{sql: "SELECT current_setting('fencegw.tokens')", kind: stRefused, code: codeBadTokens},
		{sql: "SHOW fencegw.tokens", kind: stRefused, code: codeBadTokens},
		{sql: "SET LOCAL fencegw.tokens TO DEFAULT", kind: stRefused, code: codeBadTokens},
		{sql: "SET LOCAL fencegw.resource = 'account/acct-1'", kind: stRefused, code: codeBadTokens},
		{sql: "RESET fencegw.bypass", kind: stRefused, code: codeBadTokens},
		{sql: "SELECT set_config('fencegw.resource', 'x', true)", kind: stRefused, code: codeBadTokens},
		{sql: "COPY demo.accounts FROM STDIN", kind: stRefused, code: codeUnsupported},
		{sql: "LISTEN ledger", kind: stRefused, code: codeUnsupported},
		{sql: "PREPARE TRANSACTION 'x'", kind: stRefused, code: codeUnsupported},
		{sql: "PREPARE q AS SELECT 1", kind: stOrdinary},
		{sql: "SET client_min_messages = error", kind: stRefused, code: codeUnsupported},
		{sql: "SELECT set_config('client_min_messages', 'panic', false)", kind: stRefused, code: codeUnsupported},
		{sql: "SET client_min_messages TO notice", kind: stOrdinary},
		{sql: "SELECT set_config('application_name', 'x', false)", kind: stOrdinary},
		{sql: "UPDATE demo.accounts SET balance_cents = 1 WHERE id = 'acct-1'", kind: stOrdinary},
		{sql: "SET ROLE postgres", kind: stOrdinary}, // PostgreSQL refuses it
	} {
		sts := splitStatements(tc.sql, true)
		if len(sts) != 1 {
			t.Fatalf("%s: %d statements", tc.sql, len(sts))
		}
		v := classify(sts[0])
		got := ""
		if v.refusal != nil {
			got = v.refusal.Code
		}
		if v.kind != tc.kind || v.value != tc.value || v.param != tc.param || got != tc.code || v.setConfig != tc.setConfig {
			t.Errorf("%s: kind %d value %q param %d code %q setConfig %t; want %d %q %d %q %t",
				tc.sql, v.kind, v.value, v.param, got, v.setConfig, tc.kind, tc.value, tc.param, tc.code, tc.setConfig)
		}
	}
}

// TestParseTokenList: pairs, spaces, '=' in a name; an empty list, a
// pair without a token, a malformed token and a resource named twice are
// refused, and no refusal carries a signature.
func TestParseTokenList(t *testing.T) {
	const sig = "AAAAAAAAAAAAAAAAAAAAAQ"
	got, err := parseTokenList(" account/acct-1=1:7:" + sig + " ,  k=v/x=1:9 ")
	if err != nil || len(got) != 2 || got[0].resource != "account/acct-1" || got[0].token.Revision != 7 || !got[0].token.Signed() ||
		got[1].resource != "k=v/x" || got[1].token.Revision != 9 {
		t.Fatalf("parse: %+v %v", got, err)
	}
	if u := unsignedList(got); u != "account/acct-1=1:7, k=v/x=1:9" {
		t.Errorf("unsigned: %q", u)
	}
	for _, text := range []string{"", " , ", "account/acct-1", "account/acct-1=1:7:" + sig + "x", "a=1:7, a=1:8", "a=0:1", " =1:1"} {
		_, err := parseTokenList(text)
		if err == nil || err.Code != codeBadTokens || strings.Contains(err.Message, sig) {
			t.Errorf("%q: %v, want FG400 without the signature", text, err)
		}
	}
}

package sqlfront

import (
	"strconv"
	"strings"
)

// What the front makes of one statement. It answers two forms itself,
// the ones that name a transaction's fences, and never sends them on:
//
//	SET LOCAL fencegw.tokens = 'resource=token, …'
//	SELECT set_config('fencegw.tokens', 'resource=token, …' or $n, true)
//
// It refuses what it cannot relay faithfully (COPY, LISTEN), any other
// use of fencegw.tokens or of a fencegw.* setting (a session-level SET
// of a token would outlive its transaction and be readable back), and
// a client_min_messages that would hide PostgreSQL's warnings from it
// (a COMMIT PostgreSQL warns about has an unknown outcome: commit.go).
// Everything else goes to PostgreSQL as written, to be run, or refused,
// under the client's role.

type stmtKind uint8

const (
	stOrdinary stmtKind = iota
	stTokens
	stRefused
)

// verdict is what the front makes of a statement.
type verdict struct {
	kind stmtKind
	// commits: the statement ends a transaction block with a commit
	// (COMMIT, END): the connection lost while it ran leaves the
	// transaction's outcome unknown.
	commits bool
	begins  bool // BEGIN or START TRANSACTION

	// stTokens: the tokens' text, or the parameter ($param, from 1)
	// that carries it; setConfig for the SELECT form, which answers a
	// row where SET LOCAL answers "SET".
	value     string
	param     int
	setConfig bool

	refusal *sqlError // stRefused
}

const tokensSetting = "fencegw.tokens"

// classify reads st.
func classify(st statement) verdict {
	t := st.tokens
	first := word(t, 0)
	v := verdict{
		commits: first == "commit" || first == "end",
		begins:  first == "begin" || first == "start",
	}
	if tv, ok := tokensStatement(t); ok {
		return tv
	}
	switch {
	case first == "copy":
		v.refusal = refusal(codeUnsupported, "the SQL front does not relay COPY",
			"write the rows with INSERT, or use a direct connection for bulk loads of unguarded tables")
	case first == "prepare" && word(t, 1) == "transaction":
		v.refusal = refusal(codeUnsupported, "the SQL front does not relay two-phase commit",
			"COMMIT the transaction: the front checks its fences before it commits")
	case first == "listen" || first == "unlisten":
		v.refusal = refusal(codeUnsupported, "the SQL front does not relay LISTEN",
			"listen on a direct connection: notifications need no fence")
	case mentionsTokens(t):
		v.refusal = refusal(codeBadTokens, "fencegw.tokens names the fences of one transaction, and only as SET LOCAL fencegw.tokens = '…' or set_config('fencegw.tokens', …, true)",
			"inside BEGIN … COMMIT: SET LOCAL fencegw.tokens = 'account/acct-1=1:42:SIG'")
	case setsFencegw(t):
		v.refusal = refusal(codeBadTokens, "fencegw.* settings are the SQL front's and the gateway's to make",
			"name a transaction's fences with SET LOCAL fencegw.tokens = 'resource=token, …' inside BEGIN … COMMIT")
	case hidesWarnings(t):
		v.refusal = refusal(codeUnsupported, "the SQL front must hear PostgreSQL's warnings: client_min_messages stays at warning or below",
			"a COMMIT PostgreSQL warns about has an unknown outcome, which the front can only tell you if it hears the warning")
	default:
		return v
	}
	v.kind = stRefused
	return v
}

// tokensStatement recognises the two forms that name fences.
func tokensStatement(t []token) (verdict, bool) {
	v := verdict{kind: stTokens}
	switch word(t, 0) {
	case "set":
		// SET LOCAL fencegw.tokens { = | TO } 'text'
		name, i := settingName(t, 2)
		if word(t, 1) != "local" || name != tokensSetting || i+2 != len(t) || !(op(t, i, "=") || word(t, i) == "to") ||
			t[i+1].kind != tString || !t[i+1].plain {
			return v, false
		}
		v.value = t[i+1].text
		return v, true
	case "select":
		// SELECT [pg_catalog.]set_config('fencegw.tokens', 'text' | $n[::text], true)
		i := 1
		if word(t, 1) == "pg_catalog" && op(t, 2, ".") {
			i = 3
		}
		if word(t, i) != "set_config" || !op(t, i+1, "(") || !stringIs(t, i+2, tokensSetting) || !op(t, i+3, ",") {
			return v, false
		}
		i += 4
		switch {
		case i < len(t) && t[i].kind == tString && t[i].plain:
			v.value = t[i].text
		case i < len(t) && t[i].kind == tParam:
			n, err := strconv.Atoi(t[i].text[1:])
			if err != nil || n < 1 {
				return v, false
			}
			v.param = n
		default:
			return v, false
		}
		i++
		if op(t, i, ":") && op(t, i+1, ":") && (word(t, i+2) == "text" || word(t, i+2) == "varchar") {
			i += 3
		}
		if !op(t, i, ",") || !isTrue(t, i+1) || !op(t, i+2, ")") || i+3 != len(t) {
			return v, false
		}
		v.setConfig = true
		return v, true
	}
	return v, false
}

// settingName reads a setting's name from t[i]: words and quoted
// identifiers joined by points, in lower case as PostgreSQL compares
// them; and the index after it.
func settingName(t []token, i int) (string, int) {
	var parts []string
	for i < len(t) && (t[i].kind == tWord || t[i].kind == tIdent) {
		parts = append(parts, strings.ToLower(t[i].text))
		i++
		if !op(t, i, ".") {
			break
		}
		i++
	}
	return strings.Join(parts, "."), i
}

// mentionsTokens: the setting's name appears in t, as a name or in a
// string, anywhere.
func mentionsTokens(t []token) bool {
	for i := range t {
		if t[i].kind == tString && strings.Contains(strings.ToLower(t[i].text), tokensSetting) {
			return true
		}
		if name, _ := settingName(t, i); strings.Contains(name, tokensSetting) {
			return true
		}
	}
	return false
}

// setsFencegw: SET, RESET or set_config of a fencegw.* setting.
func setsFencegw(t []token) bool {
	if w := word(t, 0); w == "set" || w == "reset" {
		i := 1
		if w := word(t, 1); w == "local" || w == "session" {
			i = 2
		}
		if name, _ := settingName(t, i); strings.HasPrefix(name, "fencegw.") {
			return true
		}
	}
	for i := range t {
		if word(t, i) == "set_config" && op(t, i+1, "(") && i+2 < len(t) && t[i+2].kind == tString &&
			strings.HasPrefix(strings.ToLower(strings.TrimSpace(t[i+2].text)), "fencegw.") {
			return true
		}
	}
	return false
}

// hidesWarnings: client_min_messages set to a level above WARNING, or to
// anything the front cannot read.
func hidesWarnings(t []token) bool {
	if w := word(t, 0); w == "set" {
		i := 1
		if w := word(t, 1); w == "local" || w == "session" {
			i = 2
		}
		if name, j := settingName(t, i); name == "client_min_messages" {
			return j+1 >= len(t) || !passesWarnings(t[j+1])
		}
	}
	for i := range t {
		if word(t, i) == "set_config" && op(t, i+1, "(") && stringIs(t, i+2, "client_min_messages") {
			return !op(t, i+3, ",") || i+4 >= len(t) || !passesWarnings(t[i+4])
		}
	}
	return false
}

// passesWarnings: a level at which PostgreSQL still sends WARNING.
func passesWarnings(tok token) bool {
	switch strings.ToLower(tok.text) {
	case "debug5", "debug4", "debug3", "debug2", "debug1", "debug", "log", "notice", "warning", "default":
		return tok.kind == tWord || tok.kind == tString || tok.kind == tIdent
	}
	return false
}

func word(t []token, i int) string {
	if i < len(t) && t[i].kind == tWord {
		return t[i].text
	}
	return ""
}

func op(t []token, i int, s string) bool { return i < len(t) && t[i].kind == tOp && t[i].text == s }

func stringIs(t []token, i int, s string) bool {
	return i < len(t) && t[i].kind == tString && t[i].plain && strings.ToLower(t[i].text) == s
}

// isTrue: true, or a string PostgreSQL reads as a true boolean.
func isTrue(t []token, i int) bool {
	if i >= len(t) {
		return false
	}
	switch strings.ToLower(t[i].text) {
	case "true", "t", "on", "yes", "y", "1":
		return t[i].kind == tString && t[i].plain || t[i].kind == tWord && t[i].text == "true"
	}
	return false
}

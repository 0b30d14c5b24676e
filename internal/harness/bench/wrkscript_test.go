package bench

import (
	"strings"
	"testing"
)

// TestLuaString quotes any text as a Lua string literal: what a token
// holds cannot end the literal or inject code.
func TestLuaString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"1:42:AbC-_09", `"1:42:AbC-_09"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"line\nbreak\x00", `"line\010break\000"`},
		{"é", `"\195\169"`},
		{"", `""`},
	} {
		if got := luaString(c.in); got != c.want {
			t.Errorf("luaString(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestWrkScriptCarriesTheCellsWrites: the script holds every account's
// token in order (account 1's alone for hot), the operation's path, the
// distribution and the bench's amount, and the functions wrk calls; it
// needs no wrk to check.
func TestWrkScriptCarriesTheCellsWrites(t *testing.T) {
	tokens := make([]string, Accounts)
	for i := range tokens {
		tokens[i] = "1:7:sig" + strings.Repeat("x", i%3)
	}
	tokens[1] = `1:7:"quoted"`
	for _, c := range []struct {
		dist   Dist
		tokens int
	}{{Uniform, Accounts}, {Hot, 1}, {Zipf, Accounts}} {
		s := wrkScript("add", tokens, c.dist)
		start := strings.Index(s, "local tokens = {\n") + len("local tokens = {\n")
		end := strings.Index(s, "}\n")
		lines := strings.Split(strings.TrimSuffix(s[start:end], ",\n"), ",\n")
		if len(lines) != c.tokens {
			t.Fatalf("%s: %d tokens in the script, want %d", c.dist, len(lines), c.tokens)
		}
		for i, l := range lines {
			if l != luaString(tokens[i]) {
				t.Fatalf("%s: token %d is %s, want %s", c.dist, i+1, l, luaString(tokens[i]))
			}
		}
		for _, want := range []string{`local path = "/v1/ops/add"`, `local dist = "` + string(c.dist) + `"`, "local zipf_s = 1.1", "local amount = 1",
			"function setup(thread)", "function init(args)", "function request()", "function done(summary, latency, requests)", `["Fencing-Token"] = tokens[id]`} {
			if !strings.Contains(s, want) {
				t.Errorf("%s: the script lacks %q", c.dist, want)
			}
		}
	}
}

package transcript

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const session = `GW=${GW:-http://127.0.0.1:8080}

# 1. A takes the lock.
A=$(echo '{"token":"1:4:abcdefghijkl"}'); echo "$A"
#    {"token":"1:4:xnxfvSaEDr0FtHOu4gPIIw"}
# narrative, not output
echo one \
     two
#    one two
#     (continued)
# B is done.
true
`

// TestParse: commands with their continuation lines, their documented
// output under them, narrative comments apart.
func TestParse(t *testing.T) {
	steps, err := Parse(session)
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{
		{Line: 1, Command: "GW=${GW:-http://127.0.0.1:8080}"},
		{Line: 4, Command: `A=$(echo '{"token":"1:4:abcdefghijkl"}'); echo "$A"`, Output: []string{`{"token":"1:4:xnxfvSaEDr0FtHOu4gPIIw"}`}},
		{Line: 7, Command: "echo one \\\n     two", Output: []string{"one two", "(continued)"}},
		{Line: 12, Command: "true"},
	}
	if len(steps) != len(want) {
		t.Fatalf("%d steps %+v, want %d", len(steps), steps, len(want))
	}
	for i := range want {
		if steps[i].Line != want[i].Line || steps[i].Command != want[i].Command || !slices.Equal(steps[i].Output, want[i].Output) {
			t.Errorf("step %d = %+v, want %+v", i, steps[i], want[i])
		}
	}
	if _, err := Parse("echo a \\"); err == nil {
		t.Error("a script ending inside a command parsed")
	}
}

// TestSessionRuns: an instrumented session runs in one shell, stderr
// merged, and splits back into its steps; one that stops says where.
func TestSessionRuns(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	steps, _ := Parse("X=1\necho out; echo err >&2\nprintf %s \"$X\"\n")
	b, err := exec.Command("bash", "-c", Instrument(steps)).Output()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Split(string(b), len(steps))
	if err != nil || !slices.Equal(got, []string{"", "out\nerr", "1"}) {
		t.Fatalf("Split = %q, %v", got, err)
	}
	steps, _ = Parse("echo a\nexit 3\necho b\n")
	b, _ = exec.Command("bash", "-c", Instrument(steps)).Output()
	if _, err := Split(string(b), len(steps)); err == nil || !strings.Contains(err.Error(), "during step 2 of 3") {
		t.Fatalf("a session that exits in step 2: %v", err)
	}
}

// TestMatch: JSON compared as JSON, text with blanks folded, wildcards,
// and tokens by their place in the order.
func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		name       string
		documented []string
		outputs    []string
		wantErr    string
	}{
		{"nothing", nil, []string{""}, ""},
		{"unexpected output", nil, []string{"x"}, "documented to print nothing"},
		{"json across lines", []string{`{"a":1,`, ` "b":[…],"c":"urn:x:…"}`}, []string{`{"b":[1,2],"c":"urn:x:42","a":1}`}, ""},
		{"json missing key", []string{`{"a":1}`}, []string{`{"a":1,"instance":"x"}`}, `printed the keys ["a" "instance"]`},
		{"json value", []string{`{"a":1}`}, []string{`{"a":2}`}, "a: printed 2, documented 1"},
		{"not json", []string{`{"a":1}`}, []string{`ERROR`}, "documented as JSON"},
		{"text folded", []string{"ERROR:  x,", "and y", "CONTEXT: line … at RAISE"}, []string{"ERROR:  x, and y\nCONTEXT: line 31 at RAISE"}, ""},
		{"text differs", []string{"700"}, []string{"600"}, `printed "600"`},
		{"tokens renamed in order", []string{`{"t":"1:4:abcdefghij"}`}, []string{`{"t":"1:5:QQQQQQQQQQQQ"}`}, ""},
		{"token keeps its renaming", []string{`{"t":"1:4:abcdefghij","u":"1:4"}`}, []string{`{"t":"1:5:QQQQQQQQQQ","u":"1:6"}`}, "stood for 5 before"},
		{"token order", []string{`{"a":"1:4","b":"1:7"}`}, []string{`{"a":"1:9","b":"1:8"}`}, "other order"},
		{"two for one", []string{`{"a":"1:4","b":"1:7"}`}, []string{`{"a":"1:8","b":"1:8"}`}, "stands for both"},
		{"epoch exact", []string{`stale token 1:4`}, []string{`stale token 2:4`}, "epoch 2, documented 1"},
		{"signature required", []string{`{"t":"1:4:abcdefghij"}`}, []string{`{"t":"1:4"}`}, "printed"},
		{"no signature", []string{`{"t":"1:4"}`}, []string{`{"t":"1:4:abcdefghij"}`}, "printed"},
		{"renaming across steps", []string{"| 1:7 |"}, []string{"| 1:8 |", "| 1:9 |"}, "stood for 8 before"},
	} {
		var m Matcher
		var err error
		for _, out := range tc.outputs {
			if err = m.Match(tc.documented, out); err != nil {
				break
			}
		}
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.wantErr)
		}
	}
}

// FuzzParse: any script parses or is refused; every step is a line of
// the script, in order, and its output lines come from its comments.
func FuzzParse(f *testing.F) {
	f.Add(session)
	f.Add("a \\\n#    b\nc\n#    d\n#  e")
	f.Fuzz(func(t *testing.T, script string) {
		steps, err := Parse(script)
		if err != nil {
			return
		}
		lines := strings.Split(script, "\n")
		last := 0
		for _, s := range steps {
			if s.Line <= last || s.Line > len(lines) || !strings.HasPrefix(s.Command, lines[s.Line-1]) {
				t.Fatalf("step %+v after line %d", s, last)
			}
			last = s.Line
			for _, o := range s.Output {
				if strings.ContainsRune(o, '\n') {
					t.Fatalf("output line %q of step %d holds a line break", o, s.Line)
				}
			}
		}
	})
}

// FuzzMatch: any documented lines and output compare without a panic;
// output documented as the wildcard always matches.
func FuzzMatch(f *testing.F) {
	f.Add(`{"t":"1:4:abcdefghij","s":[…]}`, `{"t":"1:5:x1234567","s":[1]}`)
	f.Add("ERROR: 1:2 … 3:4", "ERROR: 1:2 x 3:5")
	f.Fuzz(func(t *testing.T, documented, output string) {
		var m Matcher
		_ = m.Match(strings.Split(documented, "\n"), output)
		if err := m.Match([]string{Wildcard}, output); err != nil {
			t.Fatalf("the wildcard refused %q: %v", output, err)
		}
	})
}

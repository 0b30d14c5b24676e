package policy

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// inFormerWords spells a policy in current words the former way: kinds:
// as resources:, template: as key:, access: as kind:.
func inFormerWords(t *testing.T, src string) string {
	t.Helper()
	former := strings.NewReplacer("\nkinds:", "\nresources:", "    template: ", "    key: ", "{template: ", "{key: ", "    access: ", "    kind: ").
		Replace("\n" + src)[1:]
	if former == src {
		t.Fatal("nothing to spell the former way")
	}
	return former
}

// readPolicy is a policy with a read, for its access: to be spelled kind:.
const readPolicy = goodPolicy + `  balance:
    access: read
    resource: account
    args: {account: {type: string}}
    statements: [{sql: "SELECT :account AS id"}]
`

// TestFormerWordsParseToTheSamePolicy: each policy of the repository,
// spelled the former way, compiles to the same policy, with deprecations
// that the current spelling has none of.
func TestFormerWordsParseToTheSamePolicy(t *testing.T) {
	sources := map[string]string{"goodPolicy": goodPolicy, "readPolicy": readPolicy, "semaphorePolicy": semaphorePolicy}
	files, err := filepath.Glob("../examples/*/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append(files, "../testdata/demo/policy.yaml", "../testdata/bench/policy.yaml") {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sources[path] = string(data)
	}
	for name, src := range sources {
		t.Run(name, func(t *testing.T) {
			now, err := Check("p.yaml", []byte(src))
			if err != nil {
				t.Fatalf("current words: %v", err)
			}
			if d := now.Deprecations(); len(d) > 0 {
				t.Errorf("current words: deprecations %q, want none", d)
			}
			old, err := Check("p.yaml", []byte(inFormerWords(t, src)))
			if err != nil {
				t.Fatalf("former words: %v", err)
			}
			if len(old.Deprecations()) == 0 {
				t.Error("former words: no deprecation")
			}
			old.digest, old.deprecated = now.digest, now.deprecated
			if !reflect.DeepEqual(old, now) {
				t.Errorf("former words compile to\n%s\nwant\n%s", old.Describe(), now.Describe())
			}
		})
	}
}

// TestFormerWordsDeprecatedOnce: each former word is named once, however
// often the file uses it, with the first entry that does and the word to
// write instead.
func TestFormerWordsDeprecatedOnce(t *testing.T) {
	src := readPolicy + `  audit:
    access: read
    resource: job
    args: {day: {type: string}, n: {type: integer}}
    statements: [{sql: "SELECT :day AS day, :n AS n"}]
`
	p, err := Parse("p.yaml", []byte(inFormerWords(t, src)))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"resources: is deprecated and goes in 0.3.0: write kinds: instead",
		"key: is deprecated and goes in 0.3.0: write template: instead (resources.account.key and 1 more)",
		"kind: is deprecated and goes in 0.3.0: write access: instead (operations.audit.kind and 1 more)",
	}
	if got := p.Deprecations(); !reflect.DeepEqual(got, want) {
		t.Errorf("Deprecations() = %q\nwant %q", got, want)
	}
}

// TestFormerWordsNameTheirEntries: a problem names the entry as the file
// spells it, former word or not.
func TestFormerWordsNameTheirEntries(t *testing.T) {
	for _, tt := range []struct{ name, src, entry string }{
		{"key", "resources:\n  a:\n    key: \"a/{b\"\noperations: {}\n", "resources.a.key"},
		{"template", "kinds:\n  a:\n    template: \"a/{b\"\noperations: {}\n", "kinds.a.template"},
		{"kind", strings.Replace(goodPolicy, "    resource: job\n", "    resource: job\n    kind: peek\n", 1), "operations.run.kind"},
		{"access", strings.Replace(goodPolicy, "    resource: job\n", "    resource: job\n    access: peek\n", 1), "operations.run.access"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tt.src))
			var pe *Error
			if !errors.As(err, &pe) || !hasEntry(pe.Problems, tt.entry) {
				t.Errorf("Parse = %v; want a problem at %s", err, tt.entry)
			}
		})
	}
}

// TestOneThingSpelledTwiceIsRefused: a file that spells one thing in the
// current and the former word is refused with a problem that says which
// to keep, by Parse and by Check; no policy comes back.
func TestOneThingSpelledTwiceIsRefused(t *testing.T) {
	for _, tt := range []struct{ name, src, entry, msg string }{
		{"kinds and resources", goodPolicy + "resources:\n  other: {key: \"other/{x}\"}\n",
			"resources", "the kinds are declared twice, under kinds: and under resources:, its former name: keep kinds: only"},
		{"template and key", strings.Replace(goodPolicy, `    template: "account/{account}"`, `    template: "account/{account}"`+"\n    key: \"account/{account}\"", 1),
			"kinds.account.key", "the template is given twice, as template: and as key:, its former name: keep template: only"},
		{"access and kind", strings.Replace(readPolicy, "    access: read\n", "    access: read\n    kind: read\n", 1),
			"operations.balance.kind", "the access is given twice, as access: and as kind:, its former name: keep access: only"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse("p.yaml", []byte(tt.src))
			var pe *Error
			if !errors.As(err, &pe) || p != nil {
				t.Fatalf("Parse = %v, %v; want no policy and an *Error", p, err)
			}
			if !hasProblem(pe, tt.entry, tt.msg) {
				t.Errorf("problems %v; want %s: %s", pe.Problems, tt.entry, tt.msg)
			}
			if p, err := Check("p.yaml", []byte(tt.src)); err == nil || p != nil {
				t.Errorf("Check = %v, %v; want the file refused", p, err)
			}
		})
	}
}

func hasEntry(ps []Problem, entry string) bool {
	for _, p := range ps {
		if p.Entry == entry {
			return true
		}
	}
	return false
}

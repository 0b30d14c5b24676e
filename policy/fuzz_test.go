package policy

import (
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/tokens"
)

// FuzzParse feeds arbitrary bytes to the policy loader: it must never
// panic, every refusal must be a *Error, and every accepted policy must be
// usable (each operation fenced by a resource, with statements).
func FuzzParse(f *testing.F) {
	f.Add([]byte(goodPolicy))
	if demo, err := os.ReadFile("../testdata/demo/policy.yaml"); err == nil {
		f.Add(demo)
	}
	f.Add([]byte("kinds: {a: {template: 'a/{x}'}}\noperations: {o: {resource: a, access: read, args: {x: {type: string}}, statements: [{sql: 'SELECT :x'}]}}"))
	// The former words (words.go), alone and beside the current ones.
	f.Add([]byte("resources: {a: {key: 'a/{x}'}}\noperations: {o: {resource: a, kind: read, args: {x: {type: string}}, statements: [{sql: 'SELECT :x'}]}}"))
	f.Add([]byte("kinds: {a: {template: 'a/{x}', key: 'a/{x}'}}\nresources: {}\noperations: {o: {resource: a, access: read, kind: write, args: {x: {type: string}}, statements: [{sql: 'SELECT :x'}]}}"))
	f.Add([]byte(strings.NewReplacer("kinds:", "resources:", "template:", "key:").Replace(goodPolicy)))
	f.Add([]byte("operations: [1, 2]"))
	f.Add([]byte("&a [*a]"))
	f.Add([]byte(goodPolicy + identityClients))
	f.Add([]byte(semaphorePolicy))
	f.Add([]byte(strings.Replace(semaphorePolicy, "permits: 3", "permits: 0", 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || len(pe.Problems) == 0 {
				t.Fatalf("error %v is not a *Error with problems", err)
			}
			return
		}
		for name, op := range p.Operations {
			if len(op.Roles) == 0 || op.Roles[0].Kind == nil || op.Roles[0].Template == nil || len(op.Statements) == 0 {
				t.Fatalf("operation %s accepted without resource or statements", name)
			}
			for _, r := range op.Roles {
				if r.Kind.Permits < 0 || r.Kind.Permits > tokens.MaxPermits {
					t.Fatalf("resource %s accepted with %d permits", r.Kind.Name, r.Kind.Permits)
				}
			}
		}
	})
}

// FuzzDecodeArgs checks the request decoder: no panics, refusals are
// *ArgError, and accepted values have the declared types and bounds.
func FuzzDecodeArgs(f *testing.F) {
	p, err := Parse("test.yaml", []byte(goodPolicy))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"account":"acct-1","amount":100}`, `{"amount":1,"account":"acct-9"}`, `{"account":"acct-1","amount":1,"amount":2}`,
		`{"account":"acct-1","amount":1e2}`, `{"account":"acct-1"}`, `[]`, `{"account":"acct-1","amount":1}x`,
		`{"day":"d","n":-9223372036854775808,"dry":false}`, `{"day":"\ud800","n":1,"dry":true}`,
		`{"day":"\u00e9\n\"\\\/","n":0,"dry":true}`, `{"day":"\ud83d\ude00","n":-0,"dry":false}`, ` {"n":1 , "dry":null,"day":"x"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, name := range []string{"debit", "run"} {
			op := p.Operations[name]
			vals, err := op.DecodeArgs([]byte(body))
			if err != nil {
				var ae *ArgError
				if !errors.As(err, &ae) {
					t.Fatalf("%s: error %v is not an *ArgError", name, err)
				}
				continue
			}
			if !json.Valid([]byte(body)) {
				t.Fatalf("%s: accepted invalid JSON %q", name, body)
			}
			// Differential check: encoding/json must read the same values.
			var ref map[string]any
			dec := json.NewDecoder(strings.NewReader(body))
			dec.UseNumber()
			if err := dec.Decode(&ref); err != nil {
				t.Fatalf("%s: accepted %q that encoding/json refuses: %v", name, body, err)
			}
			for i, a := range op.Args {
				checkValue(t, a, vals[i])
				want := ref[a.Name]
				if n, ok := want.(json.Number); ok {
					want, _ = n.Int64()
				}
				if want != vals[i] {
					t.Fatalf("%s: arg %s = %#v, encoding/json reads %#v from %q", name, a.Name, vals[i], want, body)
				}
			}
		}
	})
}

func checkValue(t *testing.T, a Arg, v any) {
	t.Helper()
	switch a.Type {
	case String:
		s, ok := v.(string)
		if !ok || len(s) > a.MaxLength || (a.Pattern != nil && !a.Pattern.MatchString(s)) || strings.IndexByte(s, 0) >= 0 {
			t.Fatalf("arg %s: accepted %#v", a.Name, v)
		}
	case Integer:
		n, ok := v.(int64)
		if !ok || (a.Min != nil && n < *a.Min) || (a.Max != nil && n > *a.Max) {
			t.Fatalf("arg %s: accepted %#v", a.Name, v)
		}
	case Boolean:
		if _, ok := v.(bool); !ok {
			t.Fatalf("arg %s: accepted %#v", a.Name, v)
		}
	}
}

// FuzzScanSQL checks the :name rewriter: no panics, and every $n it emits
// names a parameter it lists.
func FuzzScanSQL(f *testing.F) {
	for _, s := range []string{
		"UPDATE t SET a = :a WHERE id = :id", "SELECT ':x' || :y::text", "SELECT $q$ :x $q$", "SELECT /* /* */ */ :z",
		"SELECT E'\\'' , :w", `SELECT ":a"`, "DELETE FROM t; ", "SELECT $1", "SELECT 'unterminated",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		sc, err := scanSQL(src)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, p := range sc.params {
			if seen[p] || p == "" {
				t.Fatalf("scanSQL(%q): params %q repeat or are empty", src, sc.params)
			}
			seen[p] = true
		}
		if len(sc.params) > 0 && !strings.Contains(sc.sql, "$"+strconv.Itoa(len(sc.params))) {
			t.Fatalf("scanSQL(%q) = %q: $%d missing", src, sc.sql, len(sc.params))
		}
	})
}

// FuzzSchemaCheck holds the schema to the compiler: whatever Parse accepts
// the schema accepts, and Check refuses exactly what Parse refuses; no
// input panics, and no problem speaks of Go types or JSON pointers.
func FuzzSchemaCheck(f *testing.F) {
	for _, seed := range []string{
		goodPolicy, schemaBase, "operations: [1, 2]", "&a [*a]", "~",
		strings.Replace(schemaBase, "expect_rows: 1", "expect_rows: 1.5", 1),
		strings.Replace(schemaBase, `template: "account/{account}"`, "template: account/{account}\n    lock_delay: -0s\n    coalesce: on\n    compare: ~", 1),
		strings.Replace(schemaBase, "    resource: account", "    resource: ''\n    resources: {from: 'account/{account}'}", 1),
		strings.Replace(schemaBase, "amount: {type: integer, min: 1}", "amount: &a {type: integer, min: 1}\n      n: {<<: *a}", 1),
		strings.Replace(schemaBase, "P0001:", "23514:", 1),
		strings.Replace(schemaBase, `template: "account/{account}"`, "template: !!binary /w==", 1), // not UTF-8
		schemaBase + "leases: {election: 'election/{group}', n: 1, bad: 'x/{'}\n",
		schemaBase + identityClients,
		strings.NewReplacer("kinds:", "resources:", "template:", "key:").Replace(schemaBase),
		strings.Replace(schemaBase, "kinds:", "resources: {}\nkinds:", 1),
		strings.Replace(schemaBase, "kinds:", "resources: ~\nkinds:", 1),
		strings.Replace(schemaBase, "kinds:", "kinds: ~\nresources:", 1),
		strings.Replace(schemaBase, `template: "account/{account}"`, `template: "account/{account}"`+"\n    key: ''", 1),
		strings.Replace(schemaBase, `template: "account/{account}"`, `template: ~`+"\n    key: 'account/{account}'", 1),
		strings.Replace(schemaBase, "    resource: account", "    resource: account\n    access: read\n    kind: write", 1),
		strings.Replace(schemaBase, "    resource: account", "    resource: account\n    kind: read", 1),
		schemaBase + "clients:\n  a: {certificate: {uri: \"x:\\f\"}, operations: [debit]}\n  b: {certificate: {cn: ~, dns: ''}, token_sha256: ~, operations: [debit]}\n",
		schemaBase + "clients:\n  a: {jwt: {subject: ''}, operations: [debit]}\n  b: {jwt: ~, certificate: {cn: b}, operations: [debit]}\n  c: {jwt: {subject: 7}, operations: [debit]}\n",
	} {
		f.Add([]byte(seed))
	}
	if demo, err := os.ReadFile("../testdata/demo/policy.yaml"); err == nil {
		f.Add(demo)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		found := schemaProblems(data)
		_, parseErr := Parse("fuzz.yaml", data)
		if parseErr == nil && len(found) > 0 {
			t.Fatalf("Parse accepts what the schema refuses: %v", found)
		}
		_, checkErr := Check("fuzz.yaml", data)
		if (parseErr == nil) != (checkErr == nil) {
			t.Fatalf("Parse = %v, but Check = %v", parseErr, checkErr)
		}
		for _, p := range found {
			for _, soup := range []string{"policy.file", "map[", "#/", "/properties", "$defs"} {
				if strings.Contains(p.Entry+": "+p.Message, soup) && !strings.Contains(string(data), soup) {
					t.Fatalf("problem %q speaks of %s", p.Entry+": "+p.Message, soup)
				}
			}
		}
	})
}

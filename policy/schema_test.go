package policy

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestSchemaCompiles(t *testing.T) {
	if _, err := compiledSchema(); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(JSONSchema(), &doc); err != nil {
		t.Fatalf("JSONSchema is not JSON: %v", err)
	}
	if got := doc["$schema"]; got != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v, want draft 2020-12", got)
	}
}

// TestSchemaAcceptsRepositoryPolicies: every policy file in the repository
// is valid by the schema, the broken one included (its mistake is one only
// the compiler can see).
func TestSchemaAcceptsRepositoryPolicies(t *testing.T) {
	var files []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "..":
			return filepath.SkipDir
		case d.Name() == "policy.yaml", filepath.Base(filepath.Dir(path)) == "policies" && strings.HasSuffix(path, ".yaml"):
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"../testdata/demo/policy.yaml", "../testdata/bench/policy.yaml", "../examples/refund/policy.yaml", "../testdata/policies/broken.yaml"} {
		if !slices.Contains(files, filepath.Clean(want)) {
			t.Errorf("found %q, not %s", files, want)
		}
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if ps := schemaProblems(data); len(ps) > 0 {
			t.Errorf("%s: the schema refuses it: %v", path, ps)
		}
	}
	if ps := schemaProblems([]byte(goodPolicy)); len(ps) > 0 {
		t.Errorf("goodPolicy: the schema refuses it: %v", ps)
	}
}

// TestSchemaAcceptsPolicyDocExamples: the policy snippets of the policy
// reference (docs/policy.md), each completed into a file.
func TestSchemaAcceptsPolicyDocExamples(t *testing.T) {
	page, err := os.ReadFile("../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	var snippets []string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(page), -1) {
		snippets = append(snippets, m[1])
	}
	if len(snippets) < 5 {
		t.Fatalf("found %d yaml snippets in docs/policy.md, want the file's, the roles', the reads', the guarded tables' and the clients'", len(snippets))
	}
	const operation = "\noperations: {noop: {resource: account, statements: [{sql: SELECT 1}]}}\n"
	for i, snippet := range snippets {
		doc := snippet
		switch {
		case strings.HasPrefix(snippet, " "): // an entry of operations
			doc = "operations:\n" + snippet
		case !strings.Contains(snippet, "\noperations:"):
			doc = snippet + operation
		}
		if ps := schemaProblems([]byte(doc)); len(ps) > 0 {
			t.Errorf("docs/policy.md snippet %d: the schema refuses it: %v\n%s", i, ps, doc)
		}
	}
}

// TestSchemaMatchesFileStructs: the schema and the structs the loader
// fills cannot drift apart. Every yaml key of every file* struct is a
// property of the schema at the same place, of the same kind, described;
// every property the schema names (in properties, required, or the
// conditions on them) is a yaml key.
func TestSchemaMatchesFileStructs(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(schemaJSON, &doc); err != nil {
		t.Fatal(err)
	}
	d := schemaDrift{t: t, root: doc}
	d.check(doc, reflect.TypeFor[fileDoc](), "policy")
	if len(d.seen) != len(fileShapes) {
		t.Errorf("checked %d structs, fileShapes names %d: a struct is not reached from fileDoc", len(d.seen), len(fileShapes))
	}
}

type schemaDrift struct {
	t    *testing.T
	root map[string]any
	seen map[reflect.Type]bool
}

func (d *schemaDrift) check(s map[string]any, typ reflect.Type, at string) {
	d.t.Helper()
	if ref, ok := s["$ref"].(string); ok {
		s = d.resolve(ref)
	}
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	want := map[reflect.Kind]string{
		reflect.Struct: "object", reflect.Map: "object", reflect.Slice: "array",
		reflect.String: "string", reflect.Bool: "boolean", reflect.Int: "integer", reflect.Int64: "integer",
	}[typ.Kind()]
	if s["type"] != want {
		d.t.Errorf("%s: schema type %v, want %s for Go %s", at, s["type"], want, typ)
		return
	}
	switch typ.Kind() {
	case reflect.Struct:
		if d.seen == nil {
			d.seen = map[reflect.Type]bool{}
		}
		d.seen[typ] = true
		if s["additionalProperties"] != false {
			d.t.Errorf("%s: additionalProperties = %v, want false", at, s["additionalProperties"])
		}
		keys := yamlKeys(typ)
		props, _ := s["properties"].(map[string]any)
		for name := range props {
			if !slices.Contains(keys, name) {
				d.t.Errorf("%s: schema property %q is no yaml key of %s (keys: %v)", at, name, typ, keys)
			}
		}
		for _, name := range namedProperties(s) {
			if !slices.Contains(keys, name) {
				d.t.Errorf("%s: the schema's conditions name %q, no yaml key of %s", at, name, typ)
			}
		}
		for f := range typ.Fields() {
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			prop, ok := props[key].(map[string]any)
			if !ok {
				d.t.Errorf("%s: yaml key %q of %s is not a schema property", at, key, typ)
				continue
			}
			if desc, _ := prop["description"].(string); desc == "" {
				d.t.Errorf("%s.%s: no description for editors to show", at, key)
			}
			d.check(prop, f.Type, at+"."+key)
		}
	case reflect.Map:
		elem, ok := s["additionalProperties"].(map[string]any)
		if !ok {
			d.t.Errorf("%s: a map wants additionalProperties to be its entries' schema", at)
			return
		}
		d.check(elem, typ.Elem(), at+".*")
	case reflect.Slice:
		items, ok := s["items"].(map[string]any)
		if !ok {
			d.t.Errorf("%s: a list wants items", at)
			return
		}
		d.check(items, typ.Elem(), at+"[]")
	}
}

func (d *schemaDrift) resolve(ref string) map[string]any {
	node := any(d.root)
	for tok := range strings.SplitSeq(strings.TrimPrefix(ref, "#/"), "/") {
		node = node.(map[string]any)[tok]
	}
	return node.(map[string]any)
}

// namedProperties lists the property names an object schema's conditions
// refer to: required, and properties and required in allOf, oneOf, anyOf,
// not, if, then and else.
func namedProperties(s map[string]any) []string {
	var names []string
	if req, ok := s["required"].([]any); ok {
		for _, n := range req {
			names = append(names, n.(string))
		}
	}
	var sub []any
	for _, kw := range []string{"allOf", "oneOf", "anyOf"} {
		if list, ok := s[kw].([]any); ok {
			sub = append(sub, list...)
		}
	}
	for _, kw := range []string{"not", "if", "then", "else"} {
		if one, ok := s[kw]; ok {
			sub = append(sub, one)
		}
	}
	for _, x := range sub {
		cond, ok := x.(map[string]any)
		if !ok {
			continue
		}
		props, _ := cond["properties"].(map[string]any)
		for name := range props {
			names = append(names, name)
		}
		names = append(names, namedProperties(cond)...)
	}
	return names
}

// TestSchemaPatternsSayWhatTheyWant: a pattern's failure reads as the
// compiler's would, in editors and in `fencegw policy check`, never as a
// regular expression.
func TestSchemaPatternsSayWhatTheyWant(t *testing.T) {
	var doc any
	if err := json.Unmarshal(schemaJSON, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["pattern"].(string); ok && v["patternErrorMessage"] == nil && !strings.HasSuffix(at, "/not") {
				t.Errorf("%s: a pattern without patternErrorMessage", at)
			}
			if _, ok := v["not"]; ok && v["errorMessage"] == nil && !strings.Contains(at, "/if") {
				t.Errorf("%s: a not without errorMessage", at)
			}
			for k, child := range v {
				walk(child, at+"/"+k)
			}
		case []any:
			for i, child := range v {
				walk(child, at+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(doc, "#")
}

package policy

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"go.yaml.in/yaml/v3"
)

// schemaProblem is one violation of the schema, in the policy's terms.
type schemaProblem struct {
	Problem
	line int
	// shape marks a mistake the loader refuses too, before compiling: an
	// unknown key, or a value of the wrong kind.
	shape bool
}

// schemaProblems validates a policy file against the schema. It finds
// nothing in data the loader cannot read as one YAML document (too large,
// not YAML, empty, duplicate keys, alias cycles): the loader's own message
// says it better.
func schemaProblems(data []byte) []schemaProblem {
	if len(data) > MaxFileSize {
		return nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || doc.Kind == 0 {
		return nil
	}
	var probe any // decoding checks duplicate keys and aliases, as the loader does
	if err := doc.Decode(&probe); err != nil {
		return nil
	}
	sch, err := compiledSchema()
	if err != nil {
		panic(err) // the embedded schema is broken: TestSchemaCompiles says how
	}
	v := readPolicyValue(&doc)
	var verr *jsonschema.ValidationError
	if !errors.As(sch.Validate(v.root), &verr) {
		return nil
	}
	r := reporter{schema: sch, value: v}
	r.collect(verr)
	slices.SortFunc(r.problems, func(a, b schemaProblem) int {
		return cmp.Or(cmp.Compare(a.line, b.line), strings.Compare(a.Entry, b.Entry), strings.Compare(a.Message, b.Message))
	})
	return slices.CompactFunc(r.problems, func(a, b schemaProblem) bool { return a.Problem == b.Problem })
}

// reporter turns the validator's tree of errors into problems: each
// failing keyword once, at the entry the policy's author wrote.
type reporter struct {
	schema   *policySchema
	value    policyValue
	problems []schemaProblem
	mappings map[string][]entryMapping // by schema location, see applying
}

func (r *reporter) collect(e *jsonschema.ValidationError) {
	switch e.ErrorKind.(type) {
	case *kind.PropertyNames, *kind.OneOf, *kind.AnyOf:
		// The causes are the attempts that failed; the keyword says more.
	default:
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				r.collect(c)
			}
			return
		}
	}
	entry, got := r.locate(e.InstanceLocation)
	s := r.schema.at(e.SchemaURL)
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		allowed := propertyNames(s)
		for _, key := range k.Properties {
			hint := ""
			if near := nearest(key, allowed); near != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", near)
			}
			r.add(entry, joinEntry(entry, key), true, "unknown key %q%s; allowed: %s", key, hint, strings.Join(allowed, ", "))
		}
	case *kind.Type:
		words := make([]string, len(k.Want))
		for i, w := range k.Want {
			words[i] = jsonTypeInWords(w)
		}
		// A null the loader reads as an empty entry, for the compiler to
		// refuse: not a mistake of shape.
		r.add(entry, entry, got != nil, "want %s, got %s", strings.Join(words, " or "), valueInWords(got))
	case *kind.Required:
		for _, key := range k.Missing {
			r.add(joinEntry(entry, key), entry, false, "missing")
		}
	case *kind.PropertyNames:
		cause := e
		for len(cause.Causes) > 0 {
			cause = cause.Causes[0]
		}
		msg := keywordMessage(r.schema.at(cause.SchemaURL), cause.ErrorKind)
		if cause == e {
			msg = cmp.Or(str(s, "patternErrorMessage"), str(s, "errorMessage"), "not a valid name here")
		}
		// jsonschema v6.0.3 keeps the validator's path buffer as the
		// location of a propertyNames error, and later siblings overwrite
		// it: find the mappings the keyword applies to instead. Each has
		// its own error, and duplicates are dropped.
		before := len(r.problems)
		for _, m := range r.applying(strings.TrimSuffix(e.SchemaURL, "/propertyNames")) {
			if _, ok := m.value[k.Property]; ok {
				at := joinEntry(m.entry, k.Property)
				r.add(at, at, false, "%s", msg)
			}
		}
		if len(r.problems) == before {
			r.add(k.Property, k.Property, false, "%s", msg) // unreachable while the walk knows the schema's layout
		}
	case *kind.Pattern:
		r.add(entry, entry, false, "%q: %s", k.Got, keywordMessage(s, k))
	default:
		r.add(entry, entry, false, "%s", keywordMessage(s, k))
	}
}

// add records a problem at entry; lineOf is the entry whose line it
// reports.
func (r *reporter) add(entry, lineOf string, shape bool, format string, args ...any) {
	line := r.value.lines[lineOf]
	msg := fmt.Sprintf(format, args...)
	if line > 0 {
		msg += fmt.Sprintf(" (line %d)", line)
	}
	r.problems = append(r.problems, schemaProblem{Problem: Problem{Entry: entry, Message: msg}, line: line, shape: shape})
}

// locate spells an instance location as the policy's entry, e.g.
// operations.debit.statements[0], and returns the value there.
func (r *reporter) locate(loc []string) (string, any) {
	entry, v := "", r.value.root
	for _, tok := range loc {
		switch x := v.(type) {
		case []any:
			i, _ := strconv.Atoi(tok)
			entry += "[" + tok + "]"
			if i >= 0 && i < len(x) {
				v = x[i]
			}
		case map[string]any:
			entry, v = joinEntry(entry, tok), x[tok]
		default:
			entry, v = joinEntry(entry, tok), nil
		}
	}
	return entry, v
}

// applying lists the mappings the schema object at location validates,
// following properties, additionalProperties, items and $ref: where the
// policy's schema puts every object it describes. Each location is walked
// once, however many names fail there.
func (r *reporter) applying(location string) []entryMapping {
	_, want, _ := strings.Cut(location, "#")
	if w, err := url.PathUnescape(want); err == nil {
		want = w
	}
	if found, ok := r.mappings[want]; ok {
		return found
	}
	var found []entryMapping
	var walk func(v any, entry, ptr string)
	walk = func(v any, entry, ptr string) {
		s := r.schema.at("#" + ptr)
		if ref := str(s, "$ref"); strings.HasPrefix(ref, "#") {
			ptr, s = strings.TrimPrefix(ref, "#"), r.schema.at(ref)
		}
		switch v := v.(type) {
		case map[string]any:
			if ptr == want {
				found = append(found, entryMapping{entry, v})
			}
			props, _ := s["properties"].(map[string]any)
			for key, child := range v {
				switch {
				case props[key] != nil:
					walk(child, joinEntry(entry, key), ptr+"/properties/"+key)
				case s["additionalProperties"] != nil:
					walk(child, joinEntry(entry, key), ptr+"/additionalProperties")
				}
			}
		case []any:
			for i, child := range v {
				walk(child, entry+"["+strconv.Itoa(i)+"]", ptr+"/items")
			}
		}
	}
	walk(r.value.root, "", "")
	if r.mappings == nil {
		r.mappings = map[string][]entryMapping{}
	}
	r.mappings[want] = found
	return found
}

type entryMapping struct {
	entry string
	value map[string]any
}

func joinEntry(entry, key string) string {
	if entry == "" {
		return key
	}
	return entry + "." + key
}

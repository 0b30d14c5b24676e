package policy

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// policyValue is a policy file read as JSON values for the schema, and
// where each entry starts in the file.
type policyValue struct {
	root  any
	lines map[string]int // by entry, e.g. operations.debit.statements[0]
	// fractions are the entries with a fraction (2.5) where the loader
	// wants a whole number: YAML's decoder cuts it (to 2) without a word.
	fractions []Problem
}

// readPolicyValue converts a decoded YAML document into JSON values the
// way the loader reads it into fileDoc, so that the schema judges what the
// gateway will run, not how it was spelled: a scalar where the loader wants
// text is that text (lock_delay: 0 is "0"), one where it wants true or false
// is read with YAML 1.1's words too (coalesce: yes), and a key the loader
// reads as nothing (null, or the empty value of a field without a pointer,
// like resource: "") is absent. Only a value the loader could not read
// keeps its YAML type, for the schema to call it the wrong kind. Anchors
// and merge keys are followed as the loader follows them.
//
// The document must have decoded without error (no alias cycles, no
// duplicate keys): readPolicyValue does not check again.
func readPolicyValue(doc *yaml.Node) policyValue {
	v := policyValue{lines: map[string]int{"": 1}}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	v.root = v.read(doc, reflect.TypeFor[fileDoc](), "")
	if v.root == nil {
		v.root = map[string]any{} // the loader reads a null document as an empty one
	}
	return v
}

// read converts n, to be loaded into a value of type t (nil: not loaded,
// an unknown key), found at entry.
func (v *policyValue) read(n *yaml.Node, t reflect.Type, entry string) any {
	n = resolveAlias(n)
	if isNull(n) {
		return nil
	}
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == nil:
	case n.Kind == yaml.MappingNode && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map):
		return v.mapping(n, t, entry)
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		items := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			if isNull(item) && !nullable(t.Elem()) {
				continue // the loader drops a null item of a list of statements or names
			}
			at := entry + "[" + strconv.Itoa(len(items)) + "]"
			v.setLine(at, item.Line)
			items = append(items, v.read(item, t.Elem(), at))
		}
		return items
	case n.Kind == yaml.ScalarNode && isScalarKind(t.Kind()):
		if fractional(n, t.Kind()) {
			// Kept a float, for the schema to call it the wrong kind.
			v.fractions = append(v.fractions, Problem{Entry: entry, Message: fmt.Sprintf("%s is not a whole number", n.Value)})
			break
		}
		out := reflect.New(t)
		if n.Decode(out.Interface()) == nil {
			return jsonScalar(out.Elem())
		}
	}
	return v.readAny(n, entry)
}

// readAny converts n by its YAML types alone.
func (v *policyValue) readAny(n *yaml.Node, entry string) any {
	switch n.Kind {
	case yaml.MappingNode:
		return v.mapping(n, nil, entry)
	case yaml.SequenceNode:
		return v.read(n, reflect.TypeFor[[]any](), entry)
	}
	var x any
	if err := n.Decode(&x); err != nil {
		return n.Value
	}
	switch x := x.(type) {
	case nil, bool, string, int, int64, uint64:
		return x
	case float64:
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			return x
		}
	}
	return n.Value // .nan, timestamps, binary: what was written
}

// mapping converts a YAML mapping loaded into t (a struct, a map, or nil).
func (v *policyValue) mapping(n *yaml.Node, t reflect.Type, entry string) map[string]any {
	m := map[string]any{}
	var merge *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := resolveAlias(n.Content[i]), n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge" {
			merge = val
			continue
		}
		var name string
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" || k.Decode(&name) != nil {
			continue // the loader skips a null key and refuses others that are not text
		}
		at := name
		if entry != "" {
			at = entry + "." + name
		}
		v.setLine(at, k.Line)
		m[name] = v.read(val, fieldType(t, name), at)
	}
	// Keys written in the mapping win over merged ones, and earlier merged
	// mappings over later ones, as the loader has it.
	if merge != nil {
		merge = resolveAlias(merge)
		sources := []*yaml.Node{merge}
		if merge.Kind == yaml.SequenceNode {
			sources = merge.Content
		}
		for _, src := range sources {
			if src = resolveAlias(src); src.Kind != yaml.MappingNode {
				continue
			}
			for name, val := range v.mapping(src, t, entry) {
				if _, set := m[name]; !set {
					m[name] = val
				}
			}
		}
	}
	if t != nil && t.Kind() == reflect.Struct {
		for name, val := range m {
			if ft := fieldType(t, name); ft != nil && (val == nil || isZeroOf(ft, val)) {
				delete(m, name)
			}
		}
	}
	return m
}

// fieldType is the type a key of a mapping loaded into t is loaded into:
// the field with that yaml tag, or a map's element; nil if none.
func fieldType(t reflect.Type, key string) reflect.Type {
	switch {
	case t == nil:
		return nil
	case t.Kind() == reflect.Map:
		return t.Elem()
	case t.Kind() != reflect.Struct:
		return nil
	}
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name == key {
			return f.Type
		}
	}
	return nil
}

// setLine records where entry starts, unless known already: a key written
// in a mapping is read before the merged ones it hides.
func (v *policyValue) setLine(entry string, line int) {
	if _, ok := v.lines[entry]; !ok {
		v.lines[entry] = line
	}
}

// isZeroOf reports whether val is what the loader leaves in a field of
// type t that is not a pointer when the key is absent.
func isZeroOf(t reflect.Type, val any) bool {
	switch t.Kind() {
	case reflect.String:
		return val == ""
	case reflect.Bool:
		return val == false
	case reflect.Int, reflect.Int64:
		return val == int64(0)
	}
	return false
}

// fractional reports a number with a fraction where the loader wants an
// integer.
func fractional(n *yaml.Node, k reflect.Kind) bool {
	if k != reflect.Int && k != reflect.Int64 || n.ShortTag() != "!!float" {
		return false
	}
	var f float64
	return n.Decode(&f) != nil || f != math.Trunc(f)
}

func isScalarKind(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64:
		return true
	}
	return false
}

// jsonScalar is a loaded scalar as a JSON value.
func jsonScalar(x reflect.Value) any {
	switch x.Kind() {
	case reflect.String:
		return x.String()
	case reflect.Bool:
		return x.Bool()
	}
	return x.Int()
}

func isNull(n *yaml.Node) bool {
	n = resolveAlias(n)
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// nullable reports whether the loader keeps a null of type t (as nil),
// rather than skipping it.
func nullable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice:
		return true
	}
	return false
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

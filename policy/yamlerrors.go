package policy

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// fileShapes names each YAML shape of a policy file for people, and lists
// its keys: yaml's messages name Go types, which mean nothing to the
// policy's author.
var fileShapes = map[string]struct {
	name string
	t    reflect.Type
}{
	"fileDoc":         {"the top level", reflect.TypeFor[fileDoc]()},
	"fileKind":        {"a kind", reflect.TypeFor[fileKind]()},
	"fileOperation":   {"an operation", reflect.TypeFor[fileOperation]()},
	"fileArg":         {"an argument", reflect.TypeFor[fileArg]()},
	"fileStatement":   {"a statement", reflect.TypeFor[fileStatement]()},
	"fileClient":      {"a client", reflect.TypeFor[fileClient]()},
	"fileCertificate": {"a client's certificate", reflect.TypeFor[fileCertificate]()},
	"fileJWT":         {"a client's jwt", reflect.TypeFor[fileJWT]()},
	"fileGuarded":     {"a guarded table", reflect.TypeFor[fileGuarded]()},
	"fileSQLError":    {"an sql_errors entry", reflect.TypeFor[fileSQLError]()},
}

var (
	unknownFieldRE = regexp.MustCompile(`^(line \d+): field (.+) not found in type policy\.(\w+)$`)
	wrongTypeRE    = regexp.MustCompile("^(line \\d+): cannot unmarshal !!(\\w+) (`.*`|) ?into (.+)$")
)

// yamlProblems turns a YAML decoding error into one problem per mistake,
// in the policy's terms: the unknown key and the keys allowed where it
// stands, or the kind of value wanted.
func yamlProblems(err error) []Problem {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return []Problem{{Message: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	ps := make([]Problem, 0, len(te.Errors))
	for _, msg := range te.Errors {
		ps = append(ps, Problem{Message: yamlMessage(msg)})
	}
	return ps
}

func yamlMessage(msg string) string {
	if m := unknownFieldRE.FindStringSubmatch(msg); m != nil {
		shape, ok := fileShapes[m[3]]
		if !ok {
			return fmt.Sprintf("%s: unknown key %q", m[1], m[2])
		}
		keys := slices.DeleteFunc(yamlKeys(shape.t), func(k string) bool { return deprecatedKey(shape.t, k) })
		hint := ""
		if near := nearest(m[2], keys); near != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", near)
		}
		return fmt.Sprintf("%s: unknown key %q in %s%s; allowed: %s", m[1], m[2], shape.name, hint, strings.Join(keys, ", "))
	}
	if m := wrongTypeRE.FindStringSubmatch(msg); m != nil {
		got := m[3]
		if got == "" {
			got = map[string]string{"map": "a mapping", "seq": "a list"}[m[2]]
		}
		return fmt.Sprintf("%s: want %s, got %s", m[1], goTypeInWords(m[4]), got)
	}
	return msg
}

// yamlKeys lists the YAML keys of a struct type, in declaration order.
func yamlKeys(t reflect.Type) []string {
	keys := make([]string, 0, t.NumField())
	for f := range t.Fields() {
		if k, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

// deprecatedKey reports whether key is a former word (words.go) of the
// struct type t: read, but neither offered nor suggested.
func deprecatedKey(t reflect.Type, key string) bool {
	for f := range t.Fields() {
		if k, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); k == key {
			return f.Tag.Get("deprecated") != ""
		}
	}
	return false
}

// nearest is the key of keys that differs from s by at most two edits, if
// one does.
func nearest(s string, keys []string) string {
	best, bestD := "", 3
	for _, k := range keys {
		if d := editDistance(s, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// goTypeInWords says what a Go type yaml wanted to fill means in YAML.
func goTypeInWords(t string) string {
	switch {
	case strings.HasPrefix(t, "map["), strings.HasPrefix(t, "policy.file"):
		return "a mapping"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case t == "bool", t == "*bool":
		return "true or false"
	case strings.Contains(t, "int"):
		return "a whole number"
	case t == "string":
		return "text"
	}
	return t
}

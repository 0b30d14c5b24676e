package policy

import (
	"errors"
	"slices"
	"strings"
)

// CheckFile reads the policy file at path and checks it as Check does.
func CheckFile(path string) (*Policy, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Check(path, data)
}

// Check validates a policy against its JSON Schema and compiles it, for
// `fencegw policy check`. It accepts exactly what Parse accepts (the
// schema enforces nothing the compiler does not: FuzzSchemaCheck holds it
// to that), and reports the schema's problems along with the compiler's,
// so that the checker, the gateway and an editor reading JSONSchema agree.
// The gateway itself calls Parse and never compiles the schema.
//
// The schema runs first. When it finds mistakes of shape (an unknown key,
// a value of the wrong kind), they are the whole answer: the loader refuses
// the same mistakes before anything is compiled, where the schema names
// the entry and the keys allowed there. Otherwise the compiler runs, and a
// schema problem is kept only if the compiler said nothing about its
// entry, an entry inside it or one containing it: the compiler's message
// knows the policy (which argument is undeclared, which resource unknown)
// where the schema knows a keyword. The compiler's problems come first.
func Check(name string, data []byte) (*Policy, error) {
	found := schemaProblems(data)
	if slices.ContainsFunc(found, func(p schemaProblem) bool { return p.shape }) {
		ps := make([]Problem, len(found))
		for i, p := range found {
			ps[i] = p.Problem
		}
		return nil, &Error{File: name, Problems: ps}
	}
	p, err := Parse(name, data)
	var pe *Error
	if err != nil && !errors.As(err, &pe) {
		return nil, err
	}
	var ps []Problem
	if pe != nil {
		ps = slices.Clone(pe.Problems)
	}
	compiled := len(ps)
	for _, sp := range found {
		if !slices.ContainsFunc(ps[:compiled], func(c Problem) bool { return relatedEntries(c.Entry, sp.Entry) }) {
			ps = append(ps, sp.Problem)
		}
	}
	if len(ps) > 0 {
		return nil, &Error{File: name, Problems: ps}
	}
	return p, nil
}

// relatedEntries reports whether two entries are the same or one is
// inside the other. The loader's problems have no entry: they concern
// the whole file, which contains every entry.
func relatedEntries(a, b string) bool {
	return a == b || entryWithin(a, b) || entryWithin(b, a)
}

func entryWithin(inner, outer string) bool {
	return outer == "" || strings.HasPrefix(inner, outer+".") || strings.HasPrefix(inner, outer+"[")
}

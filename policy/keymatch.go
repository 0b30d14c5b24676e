package policy

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/fencegw/fencegw/tokens"
)

// keyMatcher decides whether a name is one a template renders: for a
// role of an operation, from argument values the operation's declaration
// accepts (DecodeArgs); for a lock-only lease name, with each placeholder
// one or more characters.
type keyMatcher struct {
	parts []matchPart
}

// matchPart is a literal, or a value: an argument's (arg set), or a
// lock-only placeholder (arg nil).
type matchPart struct {
	literal string
	value   bool
	arg     *Arg
}

// maxMatchChecks bounds the values one match tries. A template whose
// values are separated by literals that they cannot contain (the usual
// "account/{account}", "job/{day}/{n}") takes one try per value; only
// three or more values that can split a name many ways, and a name made
// to exploit it, come near the bound, and such a name is refused.
const maxMatchChecks = 1 << 14

// roleMatcher matches what role's key renders from op's arguments.
func roleMatcher(op *Operation, role Role) *keyMatcher {
	m := &keyMatcher{}
	for _, p := range role.Template.parts {
		if p.arg == "" {
			m.parts = append(m.parts, matchPart{literal: p.literal})
			continue
		}
		m.parts = append(m.parts, matchPart{value: true, arg: &op.Args[op.argIndex[p.arg]]})
	}
	return m
}

// placeholderMatcher matches a lock-only lease template.
func placeholderMatcher(t *Template) *keyMatcher {
	m := &keyMatcher{}
	for _, p := range t.parts {
		m.parts = append(m.parts, matchPart{literal: p.literal, value: p.arg != ""})
	}
	return m
}

// match reports whether name is rendered by the template from values it
// accepts, and returns those values.
func (m *keyMatcher) match(name string) ([]string, bool) {
	s := matchState{m: m, name: name, memo: make([]int8, (len(m.parts)+1)*(len(name)+1)), budget: maxMatchChecks}
	if !s.from(0, 0) {
		return nil, false
	}
	return s.values, true
}

// matchState is one match: a search over where each value ends, each
// (part, position) tried once.
type matchState struct {
	m      *keyMatcher
	name   string
	memo   []int8 // per (part, position): 0 untried, 1 matches, 2 does not
	budget int
	values []string // the values of the match found, in reverse order while it is built
}

func (s *matchState) from(part, pos int) bool {
	if part == len(s.m.parts) {
		return pos == len(s.name)
	}
	i := part*(len(s.name)+1) + pos
	if s.memo[i] == 0 {
		s.memo[i] = 2
		if s.try(part, pos) {
			s.memo[i] = 1
		}
	}
	return s.memo[i] == 1
}

func (s *matchState) try(part, pos int) bool {
	p := s.m.parts[part]
	if !p.value {
		return strings.HasPrefix(s.name[pos:], p.literal) && s.from(part+1, pos+len(p.literal))
	}
	next, last := "", part+1 == len(s.m.parts)
	if !last && !s.m.parts[part+1].value {
		next = s.m.parts[part+1].literal
	}
	for end := pos; end <= len(s.name) && end-pos <= p.maxLen(); end++ {
		if (last && end != len(s.name)) || (next != "" && !strings.HasPrefix(s.name[end:], next)) {
			continue
		}
		if s.budget == 0 {
			return false
		}
		s.budget--
		if v := s.name[pos:end]; p.accepts(v) && s.from(part+1, end) {
			s.values = append([]string{v}, s.values...)
			return true
		}
	}
	return false
}

// maxLen is the longest text the value renders to.
func (p matchPart) maxLen() int {
	switch {
	case p.arg == nil:
		return tokens.MaxResourceLen
	case p.arg.Type == Integer:
		return len("-9223372036854775808")
	}
	return p.arg.MaxLength
}

// accepts reports whether the template renders v for this part: v is a
// value the argument's declaration accepts, in the form render writes it
// (an integer in canonical decimal); or, for a placeholder, one or more
// characters.
func (p matchPart) accepts(v string) bool {
	switch {
	case p.arg == nil:
		return v != ""
	case p.arg.Type == Integer:
		n, err := p.arg.convert(json.Number(v))
		return err == nil && strconv.FormatInt(n.(int64), 10) == v
	case p.arg.Type == String:
		_, err := p.arg.convert(v)
		return err == nil
	}
	return false // booleans are never part of a key (compile refuses them)
}

package policy

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Template derives a resource name from an operation's arguments, e.g.
// "account/{account}". The client never names the resource: the request's
// arguments do, and the gateway checks the token against the resource
// they name.
type Template struct {
	source string
	parts  []templatePart
	re     *regexp.Regexp // for match; built by parseTemplate
}

type templatePart struct {
	literal string
	arg     string // when non-empty, the part is this argument's value
}

func parseTemplate(src string) (*Template, error) {
	if !utf8.ValidString(src) {
		// Keys are UTF-8, and match's regexp refuses anything else
		// (YAML's !!binary can still spell it).
		return nil, errors.New("a template is UTF-8 text")
	}
	t := &Template{source: src}
	rest := src
	for rest != "" {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			if strings.IndexByte(rest, '}') >= 0 {
				return nil, errors.New("'}' without '{'")
			}
			t.parts = append(t.parts, templatePart{literal: rest})
			break
		}
		if open > 0 {
			if strings.IndexByte(rest[:open], '}') >= 0 {
				return nil, errors.New("'}' without '{'")
			}
			t.parts = append(t.parts, templatePart{literal: rest[:open]})
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, errors.New("'{' without '}'")
		}
		name := rest[open+1 : open+end]
		if !validName(name) {
			return nil, fmt.Errorf("{%s}: argument names are lower-case letters, digits and '_'", name)
		}
		t.parts = append(t.parts, templatePart{arg: name})
		rest = rest[open+end+1:]
	}
	if len(t.parts) == 0 {
		return nil, errors.New("empty template")
	}
	t.match("") // build the matcher now: a compiled policy is read-only
	return t, nil
}

// String returns the template as written.
func (t *Template) String() string { return t.source }

// args lists the argument names the template refers to.
func (t *Template) args() []string {
	var names []string
	for _, p := range t.parts {
		if p.arg != "" {
			names = append(names, p.arg)
		}
	}
	return names
}

// render builds the key from decoded argument values; value returns the
// value of a named argument (a string or an int64 by construction).
func (t *Template) render(value func(name string) any) string {
	n := 0 // one allocation: the key is built on every write
	for _, p := range t.parts {
		if p.arg == "" {
			n += len(p.literal)
			continue
		}
		switch v := value(p.arg).(type) {
		case string:
			n += len(v)
		case int64:
			n += 20
		}
	}
	var b strings.Builder
	b.Grow(n)
	var digits [20]byte
	for _, p := range t.parts {
		if p.arg == "" {
			b.WriteString(p.literal)
			continue
		}
		switch v := value(p.arg).(type) {
		case string:
			b.WriteString(v)
		case int64:
			b.Write(strconv.AppendInt(digits[:0], v, 10))
		}
	}
	return b.String()
}

// sameShape reports whether t and u have the same literals in the same
// places, whatever their arguments are called.
func (t *Template) sameShape(u *Template) bool {
	if len(t.parts) != len(u.parts) {
		return false
	}
	for i := range t.parts {
		if (t.parts[i].arg == "") != (u.parts[i].arg == "") || t.parts[i].literal != u.parts[i].literal {
			return false
		}
	}
	return true
}

// match reports whether key could have been rendered by the template: its
// literals in order, each argument standing for at least one character.
func (t *Template) match(key string) bool {
	if t.re == nil {
		var b strings.Builder
		b.WriteString("^")
		for _, p := range t.parts {
			if p.arg != "" {
				b.WriteString("(.+)")
				continue
			}
			b.WriteString(regexp.QuoteMeta(p.literal))
		}
		b.WriteString("$")
		t.re = regexp.MustCompile(b.String())
	}
	return t.re.MatchString(key)
}

package policy

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// BatchName stands for a batch where an operation's name would go (metrics,
// the scope of idempotency keys); no operation may be called it.
const BatchName = "batch"

// BatchItem is one write of a batch request body, as sent: the name of its
// operation, its arguments (a JSON object, for the operation's DecodeArgs)
// and its token: "E:R", or one per role.
type BatchItem struct {
	Operation  string
	Args       []byte
	Token      string      // the single form; "" when RoleTokens is set
	RoleTokens []RoleToken // in the order sent
}

// RoleToken is one role's token as sent.
type RoleToken struct{ Role, Token string }

// maxNesting bounds how deep a value DecodeBatch skips may nest: arguments
// are flat, so anything deeper is refused before it costs anything.
const maxNesting = 4

// DecodeBatch reads a batch request body, {"writes": [{"operation": …,
// "args": {…}, "token": "E:R" or {"role": "E:R", …}}, …]}, with at most
// max writes. It is as strict as DecodeArgs: unknown, repeated and missing
// keys are refused, and nothing may follow the object. Errors are
// *ArgError naming the place, e.g. writes[2].token.
func DecodeBatch(body []byte, max int) ([]BatchItem, error) {
	l := argLexer{b: body}
	l.ws()
	if !l.eat('{') {
		return nil, argErrorf("", `the body must be a JSON object: {"writes": [...]}`)
	}
	var items []BatchItem
	seen := false
	err := l.members("", func(key string) error {
		if key != "writes" {
			return argErrorf(key, `unknown key: a batch has only "writes"`)
		}
		if seen {
			return argErrorf("writes", "given more than once")
		}
		seen = true
		if !l.eat('[') {
			return argErrorf("writes", "want an array of writes")
		}
		l.ws()
		for !l.eat(']') {
			if len(items) == max {
				return argErrorf("writes", "more than %d writes: split the batch", max)
			}
			item, err := l.batchItem(fmt.Sprintf("writes[%d]", len(items)))
			if err != nil {
				return err
			}
			items = append(items, item)
			l.ws()
			if l.eat(',') {
				l.ws()
				if l.peek() == ']' {
					return malformed("trailing comma", l.i)
				}
				continue
			}
			if l.peek() != ']' {
				return malformed("want ',' or ']'", l.i)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	l.ws()
	switch {
	case l.i != len(l.b):
		return nil, argErrorf("", "unexpected data after the JSON object")
	case len(items) == 0:
		return nil, argErrorf("writes", "missing or empty: a batch has 1 to %d writes", max)
	}
	return items, nil
}

// batchItem reads one write of a batch.
func (l *argLexer) batchItem(at string) (BatchItem, error) {
	var item BatchItem
	if !l.eat('{') {
		return item, argErrorf(at, `want an object {"operation": …, "args": {…}, "token": …}`)
	}
	var has [3]bool
	err := l.members(at, func(key string) error {
		var slot int
		switch key {
		case "operation":
			slot = 0
		case "args":
			slot = 1
		case "token":
			slot = 2
		default:
			return argErrorf(at+"."+key, "unknown key: a write has operation, args and token")
		}
		if has[slot] {
			return argErrorf(at+"."+key, "given more than once")
		}
		has[slot] = true
		switch slot {
		case 0:
			s, err := l.text(at + ".operation")
			item.Operation = s
			return err
		case 1:
			start := l.i
			if l.peek() != '{' {
				return argErrorf(at+".args", "want an object of the operation's arguments")
			}
			if err := l.skip(0); err != nil {
				return err
			}
			item.Args = l.b[start:l.i]
			return nil
		}
		if l.peek() == '"' {
			s, err := l.text(at + ".token")
			item.Token = s
			return err
		}
		if !l.eat('{') {
			return argErrorf(at+".token", `want "E:R", or {"role": "E:R", …} for an operation with roles`)
		}
		return l.members(at+".token", func(role string) error {
			for _, rt := range item.RoleTokens {
				if rt.Role == role {
					return argErrorf(at+".token."+role, "given more than once")
				}
			}
			s, err := l.text(at + ".token." + role)
			item.RoleTokens = append(item.RoleTokens, RoleToken{Role: role, Token: s})
			return err
		})
	})
	if err != nil {
		return item, err
	}
	for i, name := range [3]string{"operation", "args", "token"} {
		if !has[i] {
			return item, argErrorf(at+"."+name, "missing")
		}
	}
	if item.Token == "" && item.RoleTokens == nil {
		return item, argErrorf(at+".token", "empty")
	}
	return item, nil
}

// members reads the members of an object whose '{' was just eaten, up to
// and including its '}', calling member with the lexer at each value.
func (l *argLexer) members(at string, member func(key string) error) error {
	l.ws()
	for !l.eat('}') {
		_, key, err := l.key()
		if err != nil {
			return err
		}
		l.ws()
		if !l.eat(':') {
			return malformed("want ':'", l.i)
		}
		l.ws()
		if err := member(key); err != nil {
			return err
		}
		l.ws()
		if l.eat(',') {
			l.ws()
			if l.peek() == '}' {
				return malformed("trailing comma", l.i)
			}
			continue
		}
		if l.peek() != '}' {
			return malformed("want ',' or '}'", l.i)
		}
	}
	return nil
}

// key reads an object key as a string.
func (l *argLexer) key() ([]byte, string, error) {
	raw, s, escaped, err := l.str()
	if err != nil {
		return nil, "", err
	}
	if !escaped {
		s = string(raw)
	}
	return raw, s, nil
}

// text reads a string value of valid UTF-8, at most 1 KiB: names and
// tokens, never free text.
func (l *argLexer) text(at string) (string, error) {
	if l.peek() != '"' {
		return "", argErrorf(at, "want a string")
	}
	_, s, err := l.key()
	switch {
	case err != nil:
		return "", err
	case len(s) > 1024 || !validText(s):
		return "", argErrorf(at, "not a name or a token: at most 1024 bytes of UTF-8 text")
	}
	return s, nil
}

// skip reads past one JSON value, refusing nesting deeper than maxNesting.
func (l *argLexer) skip(depth int) error {
	if depth > maxNesting {
		return malformed("nested too deep", l.i)
	}
	switch c := l.peek(); {
	case c == '"':
		_, _, _, err := l.str()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, err := l.number()
		return err
	case c == 't' || c == 'f' || c == 'n':
		_, err := l.literal()
		return err
	case c == '{':
		l.i++
		return l.members("", func(string) error { return l.skip(depth + 1) })
	case c == '[':
		l.i++
		l.ws()
		for !l.eat(']') {
			if err := l.skip(depth + 1); err != nil {
				return err
			}
			l.ws()
			if l.eat(',') {
				l.ws()
				if l.peek() == ']' {
					return malformed("trailing comma", l.i)
				}
				continue
			}
			if l.peek() != ']' {
				return malformed("want ',' or ']'", l.i)
			}
		}
		return nil
	}
	return malformed("want a value", l.i)
}

// validText reports whether s is valid UTF-8 without NUL bytes.
func validText(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }

package policy

import (
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/tokens"
)

// Values holds one request's decoded arguments, indexed like Operation.Args:
// each is a string, an int64 or a bool.
type Values []any

// DecodeArgs decodes a request body, a JSON object, into typed values. It is
// strict: every declared argument is required, unknown and repeated keys are
// refused, integers must be JSON integers within int64 and the declared
// bounds, and nothing may follow the object.
func (op *Operation) DecodeArgs(body []byte) (Values, error) {
	l := argLexer{b: body}
	l.ws()
	if !l.eat('{') {
		return nil, argErrorf("", "the body must be a JSON object of the operation's arguments")
	}
	vals := make(Values, len(op.Args))
	var seen uint64 // compile caps arguments at 64
	l.ws()
	for !l.eat('}') {
		raw, key, escaped, err := l.str()
		if err != nil {
			return nil, err
		}
		var i int
		var ok bool
		if escaped {
			i, ok = op.argIndex[key]
		} else {
			// Converted in the index expression itself, the bytes are
			// looked up without a string being allocated; held in a
			// variable first, they would be copied.
			i, ok = op.argIndex[string(raw)]
		}
		if !ok {
			if !escaped {
				key = string(raw)
			}
			return nil, argErrorf(clip.String(key, 64), "unknown argument: %s takes %s", op.Name, op.argNames())
		}
		if seen&(1<<i) != 0 {
			return nil, argErrorf(op.Args[i].Name, "given more than once")
		}
		seen |= 1 << i
		l.ws()
		if !l.eat(':') {
			return nil, malformed("want ':'", l.i)
		}
		l.ws()
		if vals[i], err = op.Args[i].read(&l); err != nil {
			return nil, err
		}
		l.ws()
		if l.eat(',') {
			l.ws()
			if l.peek() == '}' {
				return nil, malformed("trailing comma", l.i)
			}
			continue
		}
		if l.peek() != '}' {
			return nil, malformed("want ',' or '}'", l.i)
		}
	}
	l.ws()
	if l.i != len(l.b) {
		return nil, argErrorf("", "unexpected data after the JSON object")
	}
	for i := range op.Args {
		if seen&(1<<i) == 0 {
			return nil, argErrorf(op.Args[i].Name, "missing")
		}
	}
	return vals, nil
}

// read reads one JSON value and converts it to a's type.
func (a *Arg) read(l *argLexer) (any, error) {
	switch c := l.peek(); {
	case c == '"':
		raw, s, escaped, err := l.str()
		if err != nil {
			return nil, err
		}
		if !escaped {
			s = string(raw)
		}
		return a.convert(s)
	case c == '-' || (c >= '0' && c <= '9'):
		lit, _, err := l.number()
		if err != nil {
			return nil, err
		}
		return a.convert(json.Number(lit))
	case c == 't' || c == 'f' || c == 'n':
		w, err := l.literal()
		if err != nil {
			return nil, err
		}
		if w == "null" {
			return a.convert(nil)
		}
		return a.convert(w == "true")
	case c == '{' || c == '[':
		return a.convert(json.Delim(c))
	}
	return nil, malformed("want a value", l.i)
}

func (a *Arg) convert(t json.Token) (any, error) {
	switch a.Type {
	case String:
		s, ok := t.(string)
		if !ok {
			return nil, argErrorf(a.Name, "want a string, got %s", jsonKind(t))
		}
		switch {
		case len(s) > a.MaxLength:
			return nil, argErrorf(a.Name, "longer than %d bytes", a.MaxLength)
		case !utf8.ValidString(s):
			return nil, argErrorf(a.Name, "not valid UTF-8 text")
		case strings.IndexByte(s, 0) >= 0:
			// PostgreSQL's text cannot hold it.
			return nil, argErrorf(a.Name, "contains a NUL character (\\u0000), which text cannot hold")
		case a.Pattern != nil && !a.Pattern.MatchString(s):
			return nil, argErrorf(a.Name, "does not match the pattern %s", a.Pattern)
		}
		return s, nil
	case Integer:
		n, ok := t.(json.Number)
		if !ok {
			return nil, argErrorf(a.Name, "want an integer, got %s", jsonKind(t))
		}
		v, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return nil, argErrorf(a.Name, "want an integer within 64 bits, got %s", clip.String(string(n), 64))
		}
		if (a.Min != nil && v < *a.Min) || (a.Max != nil && v > *a.Max) {
			return nil, argErrorf(a.Name, "%d is out of range %s", v, a.bounds())
		}
		return v, nil
	default:
		b, ok := t.(bool)
		if !ok {
			return nil, argErrorf(a.Name, "want a boolean, got %s", jsonKind(t))
		}
		return b, nil
	}
}

func (a *Arg) bounds() string {
	lo, hi := "-inf", "+inf"
	if a.Min != nil {
		lo = strconv.FormatInt(*a.Min, 10)
	}
	if a.Max != nil {
		hi = strconv.FormatInt(*a.Max, 10)
	}
	return "[" + lo + ", " + hi + "]"
}

func jsonKind(t json.Token) string {
	switch t.(type) {
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case json.Delim:
		return "an object or array"
	}
	return "something else"
}

func (op *Operation) argNames() string {
	names := make([]string, len(op.Args))
	for i, a := range op.Args {
		names[i] = a.Name
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// Resources derives, role by role, the resources the request writes
// under, checks that each is an acceptable resource name, and appends
// them to dst (which may be nil).
func (op *Operation) Resources(dst []string, vals Values) ([]string, error) {
	for i := range op.Roles {
		key := op.Roles[i].Template.render(func(name string) any { return vals[op.argIndex[name]] })
		if err := tokens.CheckResource(key); err != nil {
			return nil, argErrorf("", "the resource name %q built from the arguments: %v", clip.String(key, 64), err)
		}
		dst = append(dst, key)
	}
	return dst, nil
}

// Bind appends the parameters of statement st for one request to dst, in
// $n order: arguments from vals, builtins from the resource names and
// tokens of the operation's roles (indexed like Roles); :_token is the
// token without its signature, E:R. Appending lets a request's statements
// share one slice.
func (op *Operation) Bind(dst []any, st *Statement, vals Values, keys []string, toks []tokens.Token) []any {
	for _, b := range st.binds {
		var v any
		switch b.builtin {
		case "":
			v = vals[b.index]
		case ParamResource:
			v = keys[b.index]
		case ParamEpoch:
			v = toks[b.index].Epoch
		case ParamRevision:
			v = toks[b.index].Revision
		case ParamToken:
			// Rows are read by more people than the holder, and outlive its
			// lease: the signature, a capability, stays out of them.
			v = toks[b.index].Unsigned().String()
		}
		dst = append(dst, v)
	}
	return dst
}

// Fingerprint identifies a request's content for idempotency: the operation
// and its decoded arguments, independent of JSON spelling and key order.
func (op *Operation) Fingerprint(vals Values) [32]byte {
	h := sha256.New()
	var buf []byte
	buf = append(buf, op.Name...)
	for i, a := range op.Args {
		buf = append(buf, 0)
		buf = append(buf, a.Name...)
		buf = append(buf, 0)
		switch v := vals[i].(type) {
		case string:
			buf = append(buf, 's')
			buf = strconv.AppendInt(buf, int64(len(v)), 10)
			buf = append(buf, ':')
			buf = append(buf, v...)
		case int64:
			buf = append(buf, 'i')
			buf = strconv.AppendInt(buf, v, 10)
		case bool:
			buf = append(buf, 'b')
			buf = strconv.AppendBool(buf, v)
		}
	}
	h.Write(buf)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

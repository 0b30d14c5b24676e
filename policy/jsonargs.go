package policy

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// argLexer reads one flat JSON object of scalars: the only shape a request
// body may have. It replaces encoding/json on the hot path (its Token API
// allocates on every token) and is checked against it by FuzzDecodeArgs:
// whatever it accepts must be valid JSON that encoding/json reads the same.
type argLexer struct {
	b []byte
	i int
}

func (l *argLexer) ws() {
	for l.i < len(l.b) {
		switch l.b[l.i] {
		case ' ', '\t', '\n', '\r':
			l.i++
		default:
			return
		}
	}
}

// peek returns the next byte, or 0 at the end.
func (l *argLexer) peek() byte {
	if l.i < len(l.b) {
		return l.b[l.i]
	}
	return 0
}

func (l *argLexer) eat(c byte) bool {
	if l.peek() == c {
		l.i++
		return true
	}
	return false
}

func malformed(what string, at int) error {
	return argErrorf("", "malformed JSON: %s at byte %d", what, at)
}

// str reads a JSON string; raw is the undecoded content when it has no
// escapes (so keys can be looked up without allocating).
func (l *argLexer) str() (raw []byte, decoded string, escaped bool, err error) {
	start := l.i
	if !l.eat('"') {
		return nil, "", false, malformed("want a string", l.i)
	}
	for j := l.i; j < len(l.b); j++ {
		switch c := l.b[j]; {
		case c == '"':
			raw, l.i = l.b[l.i:j], j+1
			return raw, "", false, nil
		case c == '\\':
			return l.escapedStr(start)
		case c < 0x20:
			return nil, "", false, malformed("control character in string", j)
		}
	}
	return nil, "", false, malformed("unterminated string", start)
}

func (l *argLexer) escapedStr(start int) ([]byte, string, bool, error) {
	var out []byte
	for j := start + 1; j < len(l.b); {
		c := l.b[j]
		switch {
		case c == '"':
			l.i = j + 1
			return nil, string(out), true, nil
		case c < 0x20:
			return nil, "", false, malformed("control character in string", j)
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		if j+1 >= len(l.b) {
			break
		}
		switch e := l.b[j+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := l.unicodeEscape(j)
			if n == 0 {
				return nil, "", false, malformed("bad \\u escape", j)
			}
			out = utf8.AppendRune(out, r)
			j += n
			continue
		default:
			return nil, "", false, malformed("bad escape", j)
		}
		j += 2
	}
	return nil, "", false, malformed("unterminated string", start)
}

// unicodeEscape decodes \uXXXX (or a surrogate pair) at j; n is the number
// of bytes used, 0 if malformed. A lone surrogate decodes to U+FFFD, as in
// encoding/json.
func (l *argLexer) unicodeEscape(j int) (rune, int) {
	r1, ok := hex4(l.b, j+2)
	if !ok {
		return 0, 0
	}
	if !utf16.IsSurrogate(r1) {
		return r1, 6
	}
	if j+7 < len(l.b) && l.b[j+6] == '\\' && l.b[j+7] == 'u' {
		if r2, ok := hex4(l.b, j+8); ok {
			if r := utf16.DecodeRune(r1, r2); r != utf8.RuneError {
				return r, 12
			}
		}
	}
	return utf8.RuneError, 6
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[at:at+4]), 16, 16)
	return rune(n), err == nil
}

// number reads a JSON number literal and reports whether it is an integer
// (no fraction, no exponent).
func (l *argLexer) number() (lit []byte, integer bool, err error) {
	start := l.i
	l.eat('-')
	switch {
	case l.eat('0'):
	case l.peek() >= '1' && l.peek() <= '9':
		l.digits()
	default:
		return nil, false, malformed("bad number", start)
	}
	integer = true
	if l.eat('.') {
		integer = false
		if l.digits() == 0 {
			return nil, false, malformed("bad number", start)
		}
	}
	if l.eat('e') || l.eat('E') {
		integer = false
		if !l.eat('+') {
			l.eat('-')
		}
		if l.digits() == 0 {
			return nil, false, malformed("bad number", start)
		}
	}
	return l.b[start:l.i], integer, nil
}

func (l *argLexer) digits() int {
	n := 0
	for l.i < len(l.b) && l.b[l.i] >= '0' && l.b[l.i] <= '9' {
		l.i++
		n++
	}
	return n
}

// literal reads true, false or null.
func (l *argLexer) literal() (string, error) {
	for _, w := range [...]string{"true", "false", "null"} {
		if len(l.b)-l.i >= len(w) && string(l.b[l.i:l.i+len(w)]) == w {
			l.i += len(w)
			return w, nil
		}
	}
	return "", malformed("unexpected character", l.i)
}

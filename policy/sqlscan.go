package policy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// scannedSQL is one policy statement with its :name parameters replaced by
// PostgreSQL's $n placeholders.
type scannedSQL struct {
	sql       string   // with $1..$n
	params    []string // params[i] is the name bound to $(i+1)
	firstWord string   // upper-cased first keyword: INSERT, UPDATE, ...
	returning bool     // RETURNING appears at the top level
}

// scanSQL rewrites :name parameters to $n. It understands just enough SQL to
// leave alone what is not a parameter: '…' and E'…' strings, "…" identifiers,
// $tag$…$tag$ bodies, -- and nested /* */ comments, and :: casts. It refuses
// more than one statement and positional $n parameters, which policy SQL
// must not use.
func scanSQL(src string) (scannedSQL, error) {
	var (
		out   strings.Builder
		s     scannedSQL
		index = map[string]int{}
		depth = 0
	)
	out.Grow(len(src) + 8)
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\'':
			escapes := i > 0 && (src[i-1] == 'E' || src[i-1] == 'e') && (i < 2 || !isWordByte(src[i-2]))
			end, err := skipQuoted(src, i, '\'', escapes)
			if err != nil {
				return s, err
			}
			out.WriteString(src[i:end])
			i = end
		case c == '"':
			end, err := skipQuoted(src, i, '"', false)
			if err != nil {
				return s, err
			}
			out.WriteString(src[i:end])
			i = end
		case c == '-' && strings.HasPrefix(src[i:], "--"):
			end := strings.IndexByte(src[i:], '\n')
			if end < 0 {
				end = len(src) - i
			}
			out.WriteString(src[i : i+end])
			i += end
		case c == '/' && strings.HasPrefix(src[i:], "/*"):
			end, err := skipBlockComment(src, i)
			if err != nil {
				return s, err
			}
			out.WriteString(src[i:end])
			i = end
		case c == '$':
			if i+1 < len(src) && isDigit(src[i+1]) {
				return s, errors.New("positional parameters ($1) are not allowed: use :name")
			}
			end, ok, err := skipDollarQuoted(src, i)
			if err != nil {
				return s, err
			}
			if !ok {
				end = i + 1
			}
			out.WriteString(src[i:end])
			i = end
		case c == ':' && strings.HasPrefix(src[i:], "::"):
			out.WriteString("::")
			i += 2
		case c == ':' && i+1 < len(src) && isWordStart(src[i+1]):
			j := i + 1
			for j < len(src) && isWordByte(src[j]) {
				j++
			}
			name := src[i+1 : j]
			n, ok := index[name]
			if !ok {
				s.params = append(s.params, name)
				n = len(s.params)
				index[name] = n
			}
			out.WriteByte('$')
			out.WriteString(strconv.Itoa(n))
			i = j
		case c == ';':
			if strings.TrimSpace(stripComments(src[i+1:])) != "" {
				return s, errors.New("one SQL statement per entry: found ';' followed by more SQL")
			}
			i = len(src) // a trailing ';' is dropped: the statement is wrapped
		case isWordStart(c):
			j := i
			for j < len(src) && isWordByte(src[j]) {
				j++
			}
			word := strings.ToUpper(src[i:j])
			if s.firstWord == "" {
				s.firstWord = word
			}
			if depth == 0 && word == "RETURNING" {
				s.returning = true
			}
			out.WriteString(src[i:j])
			i = j
		default:
			switch c {
			case '(':
				depth++
			case ')':
				depth--
			}
			out.WriteByte(c)
			i++
		}
	}
	s.sql = strings.TrimSpace(out.String())
	if s.firstWord == "" {
		return s, errors.New("empty SQL")
	}
	return s, nil
}

func skipQuoted(src string, i int, quote byte, backslashEscapes bool) (int, error) {
	for j := i + 1; j < len(src); j++ {
		switch {
		case backslashEscapes && src[j] == '\\':
			j++
		case src[j] == quote && j+1 < len(src) && src[j+1] == quote:
			j++
		case src[j] == quote:
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated %c quote at byte %d", quote, i)
}

func skipBlockComment(src string, i int) (int, error) {
	depth := 0
	for j := i; j+1 < len(src); j++ {
		switch {
		case src[j] == '/' && src[j+1] == '*':
			depth++
			j++
		case src[j] == '*' && src[j+1] == '/':
			depth--
			j++
			if depth == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("unterminated /* comment at byte %d", i)
}

// skipDollarQuoted skips $tag$…$tag$ starting at i; ok is false when the
// '$' does not open a dollar quote.
func skipDollarQuoted(src string, i int) (end int, ok bool, err error) {
	j := i + 1
	for j < len(src) && isWordByte(src[j]) && (j > i+1 || !isDigit(src[j])) {
		j++
	}
	if j >= len(src) || src[j] != '$' {
		return 0, false, nil
	}
	tag := src[i : j+1]
	k := strings.Index(src[j+1:], tag)
	if k < 0 {
		return 0, false, fmt.Errorf("unterminated %s quote at byte %d", tag, i)
	}
	return j + 1 + k + len(tag), true, nil
}

// stripComments removes -- comments so a trailing "; -- note" is accepted.
func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if k := strings.Index(line, "--"); k >= 0 {
			line = line[:k]
		}
		b.WriteString(line)
	}
	return b.String()
}

func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isWordStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isWordByte(c byte) bool  { return isWordStart(c) || isDigit(c) }

package sqlfront

import "strings"

// The literals that can hide a semicolon or a word from the lexer:
// quoted strings and identifiers, dollar-quoted bodies.

// quoted reads a string literal from its opening quote; backslashes
// escape the next byte when escapes is set. Its value is known (plain)
// when no backslash escape was used.
func (l *lexer) quoted(escapes bool) token {
	l.pos++ // the opening quote
	var b strings.Builder
	plain := true
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == '\\' && escapes:
			plain = false
			l.pos += 2
			continue
		case c == '\'' && strings.HasPrefix(l.src[l.pos:], "''"):
			b.WriteByte('\'')
			l.pos += 2
			continue
		case c == '\'':
			l.pos++
			return token{kind: tString, text: b.String(), plain: plain}
		}
		b.WriteByte(c)
		l.pos++
	}
	return token{kind: tString, text: b.String()} // unterminated: PostgreSQL refuses it
}

// identifier reads a quoted identifier; "" stands for one quote.
func (l *lexer) identifier() token {
	l.pos++
	var b strings.Builder
	for l.pos < len(l.src) {
		if l.src[l.pos] == '"' {
			if strings.HasPrefix(l.src[l.pos:], `""`) {
				b.WriteByte('"')
				l.pos += 2
				continue
			}
			l.pos++
			break
		}
		b.WriteByte(l.src[l.pos])
		l.pos++
	}
	return token{kind: tIdent, text: b.String()}
}

// dollarQuoted reads $tag$…$tag$ if one starts here.
func (l *lexer) dollarQuoted() (token, bool) {
	end := l.pos + 1
	for end < len(l.src) && (isIdentStart(l.src[end]) || isDigit(l.src[end])) {
		end++
	}
	if end >= len(l.src) || l.src[end] != '$' {
		return token{}, false
	}
	tag := l.src[l.pos : end+1]
	body := end + 1
	i := strings.Index(l.src[body:], tag)
	if i < 0 {
		l.pos = len(l.src) // unterminated: PostgreSQL refuses it
		return token{kind: tString, text: l.src[body:]}, true
	}
	l.pos = body + i + len(tag)
	return token{kind: tString, text: l.src[body : body+i], plain: true}, true
}

package sqlfront

import "strings"

// The front reads SQL only as far as it must: to split a simple query's
// text into its statements, and to tell the few statements it answers
// or refuses itself (classify.go) from the rest, which PostgreSQL gets
// as they were written. The lexer knows what can hide a semicolon or a
// word: quoted strings (standard, E'…' with backslash escapes, U&'…',
// dollar-quoted bodies), quoted identifiers and comments, nested ones
// included; and, as psql does, that a semicolon inside parentheses or a
// BEGIN ATOMIC body of CREATE FUNCTION ends no statement. What it cannot
// read (an unterminated quote) stays inside the last statement, which
// PostgreSQL then refuses as it would have.

type tokKind uint8

const (
	tWord   tokKind = iota // a keyword or unquoted identifier, in lower case
	tIdent                 // a quoted identifier, its quotes undone
	tString                // a string literal
	tParam                 // $n
	tNumber                // digits, perhaps a point and exponent
	tOp                    // one character of punctuation or an operator
)

// token is one lexical token of a statement.
type token struct {
	kind tokKind
	text string
	// plain: a tString whose text is its value (a standard string, or
	// an escape string without escapes but doubled quotes); other
	// literals' text is what they were written as.
	plain bool
}

// statement is one statement of a query's text: where it is, without
// its semicolon, and its tokens.
type statement struct {
	start, end int
	tokens     []token
}

// splitStatements splits sql into its statements. standardStrings is the
// session's standard_conforming_strings: off, a backslash escapes in
// '…' too. Empty statements (";;", a comment alone) are dropped.
func splitStatements(sql string, standardStrings bool) []statement {
	l := lexer{src: sql, standard: standardStrings}
	var out []statement
	cur := statement{start: 0}
	parens, atomic := 0, 0
	for {
		start := l.pos
		tok, ok := l.next()
		if !ok {
			break
		}
		if tok.kind == tOp && tok.text == ";" && parens == 0 && atomic == 0 {
			cur.end = start
			if len(cur.tokens) > 0 {
				out = append(out, cur)
			}
			cur = statement{start: l.pos}
			continue
		}
		switch {
		case tok.kind == tOp && tok.text == "(":
			parens++
		case tok.kind == tOp && tok.text == ")" && parens > 0:
			parens--
		case tok.kind == tWord && len(cur.tokens) > 0 && cur.tokens[0].kind == tWord && cur.tokens[0].text == "create":
			switch {
			case tok.text == "begin", tok.text == "case" && atomic > 0:
				atomic++
			case tok.text == "end" && atomic > 0:
				atomic--
			}
		}
		cur.tokens = append(cur.tokens, tok)
	}
	cur.end = len(sql)
	if len(cur.tokens) > 0 {
		out = append(out, cur)
	}
	return out
}

type lexer struct {
	src      string
	pos      int
	standard bool
}

// next returns the next token, skipping white space and comments; false
// at the end.
func (l *lexer) next() (token, bool) {
	l.skipSpace()
	if l.pos >= len(l.src) {
		return token{}, false
	}
	c := l.src[l.pos]
	switch {
	case c == '\'':
		return l.quoted(!l.standard), true
	case c == '"':
		return l.identifier(), true
	case c == '$' && l.pos+1 < len(l.src) && isDigit(l.src[l.pos+1]):
		start := l.pos
		l.pos++
		for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
			l.pos++
		}
		return token{kind: tParam, text: l.src[start:l.pos]}, true
	case c == '$':
		if tok, ok := l.dollarQuoted(); ok {
			return tok, true
		}
	case isIdentStart(c):
		return l.word(), true
	case isDigit(c) || c == '.' && l.pos+1 < len(l.src) && isDigit(l.src[l.pos+1]):
		start := l.pos
		for l.pos < len(l.src) && (isDigit(l.src[l.pos]) || l.src[l.pos] == '.' || l.src[l.pos] == 'e' || l.src[l.pos] == 'E' || l.src[l.pos] == '_') {
			l.pos++
		}
		return token{kind: tNumber, text: l.src[start:l.pos]}, true
	}
	l.pos++
	return token{kind: tOp, text: string(c)}, true
}

// skipSpace skips white space and comments: -- to the end of the line,
// /* … */ nested.
func (l *lexer) skipSpace() {
	for l.pos < len(l.src) {
		switch c := l.src[l.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.pos++
		case strings.HasPrefix(l.src[l.pos:], "--"):
			if i := strings.IndexByte(l.src[l.pos:], '\n'); i >= 0 {
				l.pos += i + 1
			} else {
				l.pos = len(l.src)
			}
		case strings.HasPrefix(l.src[l.pos:], "/*"):
			l.blockComment()
		default:
			return
		}
	}
}

// blockComment skips a /* … */ comment, nested ones inside it.
func (l *lexer) blockComment() {
	depth := 0
	for l.pos < len(l.src) {
		switch {
		case strings.HasPrefix(l.src[l.pos:], "/*"):
			depth++
			l.pos += 2
		case strings.HasPrefix(l.src[l.pos:], "*/"):
			depth--
			l.pos += 2
			if depth == 0 {
				return
			}
		default:
			l.pos++
		}
	}
}

// word reads a keyword or identifier, or a prefixed string literal:
// E'…' (escapes), U&'…', B'…', X'…', N'…'.
func (l *lexer) word() token {
	start := l.pos
	for l.pos < len(l.src) && (isIdentStart(l.src[l.pos]) || isDigit(l.src[l.pos]) || l.src[l.pos] == '$') {
		l.pos++
	}
	w := strings.ToLower(l.src[start:l.pos])
	if l.pos < len(l.src) && l.src[l.pos] == '\'' {
		switch w {
		case "e":
			return l.quoted(true)
		case "b", "x", "n":
			tok := l.quoted(false)
			tok.plain = tok.plain && w == "n"
			return tok
		}
	}
	if w == "u" && strings.HasPrefix(l.src[l.pos:], "&'") {
		l.pos++
		tok := l.quoted(false)
		tok.plain = false // its \XXXX escapes are not read here
		return tok
	}
	if w == "u" && strings.HasPrefix(l.src[l.pos:], `&"`) {
		l.pos++
		return l.identifier()
	}
	return token{kind: tWord, text: w}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isIdentStart: letters, '_' and every byte of a multi-byte character,
// as PostgreSQL's scanner has it.
func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

package gateway

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// TokenHeader carries the fencing tokens of a write: "E:R" for an
// operation of one resource, or an RFC 8941 dictionary of strings keyed
// by role for an operation with roles: from="1:42", to="1:57".
const TokenHeader = "Fencing-Token"

// maxFieldRoles bounds the members of a Fencing-Token dictionary: no
// operation has more roles (policy), and each member is compared with the
// ones before it.
const maxFieldRoles = 16

// roleToken is one member of a Fencing-Token dictionary.
type roleToken struct {
	role string
	tok  tokens.Token
}

// tokenField is a parsed Fencing-Token field: one token, or one per role.
type tokenField struct {
	single tokens.Token
	roles  []roleToken // nil for the single form
	batch  bool        // from a batch's body, not the header: for messages
}

// readTokenField reads the Fencing-Token field of r. Several field lines
// are one field joined with commas (RFC 9110), as a dictionary may be
// split over lines; a single token must come on one.
func readTokenField(r *http.Request) (tokenField, bool, error) {
	values := r.Header.Values(TokenHeader)
	switch len(values) {
	case 0:
		return tokenField{}, false, nil
	case 1:
		f, err := parseTokenField(values[0])
		return f, true, err
	}
	joined := strings.Join(values, ",")
	if !strings.Contains(joined, "=") {
		return tokenField{}, true, badRequest("%d %s headers: send exactly one", len(values), TokenHeader)
	}
	f, err := parseTokenField(joined)
	return f, true, err
}

// parseTokenField parses one field value: a bare token E:R, or a
// dictionary of role="E:R" members. It is stricter than RFC 8941 where
// leniency would hide mistakes: every member needs a string value, a
// repeated role is refused rather than the last one winning, and
// parameters are refused rather than ignored.
func parseTokenField(s string) (tokenField, error) {
	s = strings.Trim(s, " ")
	if !strings.Contains(s, "=") {
		tok, err := tokens.Parse(s)
		return tokenField{single: tok}, err
	}
	var f tokenField
	p := sfParser{s: s}
	for {
		if len(f.roles) == maxFieldRoles {
			return tokenField{}, p.fail(fmt.Sprintf("more than %d roles", maxFieldRoles))
		}
		role := p.key()
		if role == "" {
			return tokenField{}, p.fail("want a role name (lower-case letters, digits, '_')")
		}
		for _, rt := range f.roles {
			if rt.role == role {
				return tokenField{}, badRequest("%s: role %q given twice", TokenHeader, clip.String(role, 64))
			}
		}
		if !p.eat('=') {
			return tokenField{}, p.fail(fmt.Sprintf("role %q has no token: write %s=\"E:R:SIGNATURE\", the token as its lease grant returned it", clip.String(role, 64), clip.String(role, 64)))
		}
		text, ok := p.str()
		if !ok {
			return tokenField{}, p.fail(fmt.Sprintf("the token of role %q must be a quoted string, e.g. %s=\"1:42\"", clip.String(role, 64), clip.String(role, 64)))
		}
		tok, err := tokens.Parse(text)
		if err != nil {
			return tokenField{}, fmt.Errorf("role %q: %w", clip.String(role, 64), err)
		}
		f.roles = append(f.roles, roleToken{role: role, tok: tok})
		p.ows()
		if p.done() {
			return f, nil
		}
		if p.peek() == ';' {
			return tokenField{}, p.fail("parameters are not allowed")
		}
		if !p.eat(',') {
			return tokenField{}, p.fail("want ',' between roles")
		}
		p.ows()
		if p.done() {
			return tokenField{}, p.fail("trailing ','")
		}
	}
}

// tokensFor matches a field to op's roles: the single form for an
// operation of one resource, one member per role otherwise. A missing
// role is ErrTokenRequired; an unknown one, or the wrong form, is a bad
// request. The tokens, indexed like op.Roles, go into dst's storage when
// it has room.
func tokensFor(dst []tokens.Token, op *policy.Operation, f tokenField) ([]tokens.Token, error) {
	where, single, several := TokenHeader, TokenHeader+": "+tokenShape(op.Roles[0]), exampleField(op)
	if f.batch {
		where, single, several = "token", `"token": "`+tokenShape(op.Roles[0])+`"`, exampleObject(op)
	}
	if !op.Named() {
		if f.roles != nil {
			return nil, badRequest("%s of %s: this operation writes one resource: send %s", where, op.Name, single)
		}
		return append(dst[:0], f.single), nil
	}
	if f.roles == nil {
		return nil, badRequest("%s of %s: this operation has roles %s: send one token per role, e.g. %s", where, op.Name, op.RoleNames(), several)
	}
	toks := slices.Grow(dst[:0], len(op.Roles))[:len(op.Roles)]
	clear(toks)
	for _, rt := range f.roles {
		i, ok := op.Role(rt.role)
		if !ok {
			return nil, badRequest("%s: %s has no role %q; its roles are %s", where, op.Name, clip.String(rt.role, 64), op.RoleNames())
		}
		toks[i] = rt.tok
	}
	for i, tok := range toks {
		if tok.IsZero() {
			return nil, fmt.Errorf("%w: no token for role %s of %s: send %s", ErrTokenRequired, op.Roles[i].Name, op.Name, several)
		}
	}
	return toks, nil
}

// errNoToken refuses a request of op that sent no Fencing-Token, showing
// the field to send.
func errNoToken(op *policy.Operation) error {
	if op.Named() {
		return fmt.Errorf("%w: send one token per role of %s, each exactly as its lease grant returned it: %s: %s", ErrTokenRequired, op.Name, TokenHeader, exampleField(op))
	}
	return fmt.Errorf("%w: send the token of your lease exactly as its grant returned it: %s: %s", ErrTokenRequired, TokenHeader, tokenShape(op.Roles[0]))
}

// tokenShape is the token a role takes, as a refusal's example shows it:
// whole, as the lease grant returns it, since a bare E:R is refused as
// unsigned; only a resource of validation revision takes E:R. A
// semaphore's permit token names its permit.
func tokenShape(r policy.Role) string {
	switch {
	case r.Kind != nil && r.Kind.Validation == tokens.ValidateRevision:
		return "E:R"
	case r.Kind != nil && r.Kind.Permits > 0:
		return "E:R#P:SIGNATURE"
	}
	return "E:R:SIGNATURE"
}

// exampleField shows the dictionary form for op's roles.
func exampleField(op *policy.Operation) string {
	parts := make([]string, len(op.Roles))
	for i, r := range op.Roles {
		parts[i] = r.Name + `="` + tokenShape(r) + `"`
	}
	return strings.Join(parts, ", ")
}

// exampleObject shows a batch write's token object for op's roles.
func exampleObject(op *policy.Operation) string {
	parts := make([]string, len(op.Roles))
	for i, r := range op.Roles {
		parts[i] = `"` + r.Name + `": "` + tokenShape(r) + `"`
	}
	return `"token": {` + strings.Join(parts, ", ") + "}"
}

// sfParser reads the parts of an RFC 8941 dictionary the field uses.
type sfParser struct {
	s string
	i int
}

func (p *sfParser) done() bool { return p.i >= len(p.s) }

func (p *sfParser) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

func (p *sfParser) eat(c byte) bool {
	if p.peek() == c && !p.done() {
		p.i++
		return true
	}
	return false
}

// ows skips optional white space: spaces and tabs.
func (p *sfParser) ows() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// key reads a dictionary key. RFC 8941 allows more characters than role
// names have ('-', '.', '*'); they are read here and refused by tokensFor
// as unknown roles, with the role's name in the message.
func (p *sfParser) key() string {
	start := p.i
	if c := p.peek(); !(c >= 'a' && c <= 'z' || c == '*') {
		return ""
	}
	for !p.done() {
		c := p.s[p.i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '*') {
			break
		}
		p.i++
	}
	return p.s[start:p.i]
}

// str reads an sf-string: printable ASCII in double quotes, with \" and
// \\ the only escapes.
func (p *sfParser) str() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '"':
			return b.String(), true
		case c == '\\':
			if p.done() || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
				return "", false
			}
			b.WriteByte(p.s[p.i])
			p.i++
		case c < 0x20 || c > 0x7e:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}

func (p *sfParser) fail(why string) error {
	return badRequest("%s: %s at byte %d of %q", TokenHeader, why, p.i, clip.String(tokens.Redact(p.s), 96))
}

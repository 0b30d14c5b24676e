package sqlfront

import (
	"fmt"
	"strings"

	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/tokens"
)

// maxFences bounds the fences one SET LOCAL fencegw.tokens names, and
// maxTokensText its text: a transaction fences a few resources, and the
// text arrives from the client.
const (
	maxFences     = 64
	maxTokensText = 32 << 10
)

// namedToken is one "resource=token" of fencegw.tokens.
type namedToken struct {
	resource string
	token    tokens.Token
}

// parseTokenList reads fencegw.tokens' text: "resource=token" pairs,
// comma-separated, spaces around each part ignored. A resource's name
// may hold '=' (a token holds none: the last '=' splits a pair), not a
// comma. It refuses an empty list, a pair without a token, a malformed
// token and one resource named twice, whatever its tokens; its errors
// never carry a signature.
func parseTokenList(text string) ([]namedToken, *sqlError) {
	if len(text) > maxTokensText {
		return nil, refusal(codeBadTokens, fmt.Sprintf("fencegw.tokens is %d bytes, at most %d", len(text), maxTokensText), "")
	}
	if strings.TrimSpace(text) == "" {
		return nil, refusal(codeBadTokens, "fencegw.tokens names no fence", tokensHint)
	}
	pairs := strings.Split(text, ",")
	if len(pairs) > maxFences {
		return nil, refusal(codeBadTokens, fmt.Sprintf("fencegw.tokens names %d fences, at most %d", len(pairs), maxFences), "")
	}
	out := make([]namedToken, 0, len(pairs))
	seen := make(map[string]bool, len(pairs))
	for _, p := range pairs {
		i := strings.LastIndexByte(p, '=')
		if i < 0 {
			return nil, refusal(codeBadTokens, fmt.Sprintf("fencegw.tokens: %q is not resource=token", clip.String(tokens.Redact(strings.TrimSpace(p)), 80)), tokensHint)
		}
		resource, text := strings.TrimSpace(p[:i]), strings.TrimSpace(p[i+1:])
		if err := tokens.CheckResource(resource); err != nil {
			return nil, refusal(codeBadTokens, fmt.Sprintf("fencegw.tokens: resource %q: %v", clip.String(resource, 80), err), "")
		}
		tok, err := tokens.Parse(text)
		if err != nil {
			return nil, refusal(codeBadTokens, fmt.Sprintf("fencegw.tokens: the token for %s: %v", clip.String(resource, 80), err), tokensHint)
		}
		if seen[resource] {
			return nil, refusal(codeBadTokens, fmt.Sprintf("fencegw.tokens names %s twice: one token per resource", clip.String(resource, 80)), "")
		}
		seen[resource] = true
		out = append(out, namedToken{resource: resource, token: tok})
	}
	return out, nil
}

// tokensHint shows the form fencegw.tokens takes.
const tokensHint = "SET LOCAL fencegw.tokens = 'account/acct-1=1:42:SIG, account/acct-2=1:57:SIG', each token as its lease was granted"

// unsignedList is text's pairs with their tokens unsigned: what a
// set_config answers the client with, which need not carry signatures.
func unsignedList(ts []namedToken) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.resource + "=" + t.token.Unsigned().String()
	}
	return strings.Join(parts, ", ")
}

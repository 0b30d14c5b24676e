package tokens

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/outcome"
)

// Token is a fencing token: an operator-controlled epoch and the etcd create
// revision of the holder's lock key. Tokens compare lexicographically, epoch
// first, so bumping the epoch makes every older token stale even if a
// restored etcd starts issuing lower revisions.
//
// A token the gateway issues also carries a signature (see Keyring) that
// binds it to the resource and client it was granted to: the number alone
// is no capability. Order and Compare ignore the signature.
type Token struct {
	Epoch    int64
	Revision int64
	// Permit is the slot of a semaphore's permit the token was granted
	// for, 1 to MaxPermits; 0 for a lock's token. Its fence is the slot's
	// (PermitResource), and the signature binds it (Keyring).
	Permit int
	Sig    Sig // zero: unsigned
}

// Sig is a token's signature: a MAC truncated to 128 bits.
type Sig [sigLen]byte

const sigLen = 16

// sigText is the text of a signature: base64url without padding, strict
// (one spelling per signature).
var sigText = base64.RawURLEncoding.Strict()

// maxDigits bounds the text form: int64 has at most 19 decimal digits.
const maxDigits = 19

// ErrMalformed is wrapped by every Parse error.
var ErrMalformed = outcome.New("tokens: malformed token", outcome.Refused)

// Parse reads the text form "E:R", or "E:R:SIG" for a signed token, with
// "#P" after R for a permit's token ("1:42#2:SIG"). It is strict so that
// one token has exactly one spelling: the numbers are decimal digits
// without sign, space or leading zero, epoch and revision at least 1 and
// at most math.MaxInt64 (PostgreSQL bigint), a permit 1 to MaxPermits;
// the signature is 22 characters of base64url.
func Parse(s string) (Token, error) {
	e, r, ok := strings.Cut(s, ":")
	if !ok {
		return Token{}, fmt.Errorf("%w: %q: want EPOCH:REVISION, e.g. 1:42", ErrMalformed, clip.String(Redact(s), 48))
	}
	var sig Sig
	if r, sigPart, signed := strings.Cut(r, ":"); signed {
		if len(sigPart) != sigText.EncodedLen(sigLen) {
			return Token{}, fmt.Errorf("%w: %q: the signature after the second ':' must be %d characters", ErrMalformed, clip.String(Redact(s), 48), sigText.EncodedLen(sigLen))
		}
		// The decoder skips newlines; only the alphabet may spell a signature.
		if strings.IndexFunc(sigPart, notBase64URL) >= 0 {
			return Token{}, fmt.Errorf("%w: %q: the signature is not base64url", ErrMalformed, clip.String(Redact(s), 48))
		}
		if _, err := sigText.Decode(sig[:], []byte(sigPart)); err != nil {
			return Token{}, fmt.Errorf("%w: %q: the signature is not base64url", ErrMalformed, clip.String(Redact(s), 48))
		}
		if sig == (Sig{}) {
			// The zero value means unsigned: this would be a second
			// spelling of E:R. No key signs it (a 2^-128 chance).
			return Token{}, fmt.Errorf("%w: %q: a signature of all zeros is no signature", ErrMalformed, clip.String(Redact(s), 48))
		}
		tok, err := parseNumbers(s, e, r)
		tok.Sig = sig
		return tok, err
	}
	return parseNumbers(s, e, r)
}

func notBase64URL(r rune) bool {
	return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
}

// parseNumbers reads the epoch, revision and permit parts of s.
func parseNumbers(s, e, r string) (Token, error) {
	epoch, err := parsePart(e)
	if err != nil {
		return Token{}, fmt.Errorf("%w: %q: epoch %v", ErrMalformed, clip.String(Redact(s), 48), err)
	}
	r, p, isPermit := strings.Cut(r, "#")
	rev, err := parsePart(r)
	if err != nil {
		return Token{}, fmt.Errorf("%w: %q: revision %v", ErrMalformed, clip.String(Redact(s), 48), err)
	}
	tok := Token{Epoch: epoch, Revision: rev}
	if isPermit {
		n, err := parsePart(p)
		if err == nil && n > MaxPermits {
			err = fmt.Errorf("is above %d", MaxPermits)
		}
		if err != nil {
			return Token{}, fmt.Errorf("%w: %q: permit %v", ErrMalformed, clip.String(Redact(s), 48), err)
		}
		tok.Permit = int(n)
	}
	return tok, nil
}

// parsePart errors are descriptions, not causes: they are formatted into the
// ErrMalformed message and never inspected.
func parsePart(s string) (int64, error) {
	switch {
	case s == "":
		return 0, errors.New("is empty")
	case len(s) > maxDigits:
		return 0, errors.New("is too long")
	case s[0] == '0':
		return 0, errors.New("must be at least 1, without leading zeros")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("must be decimal digits")
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > math.MaxInt64 {
		return 0, errors.New("is above 9223372036854775807")
	}
	return int64(n), nil
}

// String returns the text form: "E:R", "E:R#P" for a permit's token, and
// ":SIG" after either for a signed token.
// A signed token is a capability: show others Unsigned().String().
func (t Token) String() string {
	return string(t.appendTo(make([]byte, 0, 2*maxDigits+2+5+sigText.EncodedLen(sigLen))))
}

// AppendText appends the text form to b (encoding.TextAppender).
func (t Token) AppendText(b []byte) ([]byte, error) { return t.appendTo(b), nil }

// MarshalText returns the text form, so that a Token is a JSON string.
func (t Token) MarshalText() ([]byte, error) { return t.appendTo(nil), nil }

func (t Token) appendTo(b []byte) []byte {
	b = strconv.AppendInt(b, t.Epoch, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, t.Revision, 10)
	if t.Permit > 0 {
		b = append(b, '#')
		b = strconv.AppendInt(b, int64(t.Permit), 10)
	}
	if t.Signed() {
		b = append(b, ':')
		b = sigText.AppendEncode(b, t.Sig[:])
	}
	return b
}

// Signed reports whether t carries a signature.
func (t Token) Signed() bool { return t.Sig != Sig{} }

// Unsigned returns t without its signature: its place in the order (and
// its permit), which may be shown to anyone (logs, problem documents,
// observers).
func (t Token) Unsigned() Token { return Token{Epoch: t.Epoch, Revision: t.Revision, Permit: t.Permit} }

// UnmarshalText parses the text form as strictly as Parse.
func (t *Token) UnmarshalText(b []byte) error {
	parsed, err := Parse(string(b))
	if err != nil {
		return err
	}
	*t = parsed
	return nil
}

// Compare returns -1, 0 or +1 as t is older than, equal to or newer than
// u, signatures and permits aside: a fence holds the tokens of one lock,
// or of one permit slot, and orders them by epoch and revision alone.
func (t Token) Compare(u Token) int {
	if c := cmp.Compare(t.Epoch, u.Epoch); c != 0 {
		return c
	}
	return cmp.Compare(t.Revision, u.Revision)
}

// IsZero reports whether t is the zero Token, which Parse never returns.
func (t Token) IsZero() bool { return t == Token{} }

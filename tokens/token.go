package tokens

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fencegw/fencegw/internal/clip"
)

// Token is a fencing token: an operator-controlled epoch and the etcd create
// revision of the holder's lock key. Tokens compare lexicographically, epoch
// first, so bumping the epoch makes every older token stale even if a
// restored etcd starts issuing lower revisions.
type Token struct {
	Epoch    int64
	Revision int64
}

// maxDigits bounds the text form: int64 has at most 19 decimal digits.
const maxDigits = 19

// ErrMalformed is wrapped by every Parse error.
var ErrMalformed = errors.New("tokens: malformed token")

// Parse reads the text form "E:R". It is strict so that one token has exactly
// one spelling: both parts are decimal digits without sign, space or leading
// zero, both at least 1 and at most math.MaxInt64 (PostgreSQL bigint).
func Parse(s string) (Token, error) {
	e, r, ok := strings.Cut(s, ":")
	if !ok {
		return Token{}, fmt.Errorf("%w: %q: want EPOCH:REVISION, e.g. 1:42", ErrMalformed, clip.String(s, 48))
	}
	epoch, err := parsePart(e)
	if err != nil {
		return Token{}, fmt.Errorf("%w: %q: epoch %v", ErrMalformed, clip.String(s, 48), err)
	}
	rev, err := parsePart(r)
	if err != nil {
		return Token{}, fmt.Errorf("%w: %q: revision %v", ErrMalformed, clip.String(s, 48), err)
	}
	return Token{Epoch: epoch, Revision: rev}, nil
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

// String returns the text form "E:R".
func (t Token) String() string {
	return string(t.appendTo(make([]byte, 0, 2*maxDigits+1)))
}

// AppendText appends the text form "E:R" to b (encoding.TextAppender).
func (t Token) AppendText(b []byte) ([]byte, error) { return t.appendTo(b), nil }

// MarshalText returns the text form, so that a Token is a JSON string.
func (t Token) MarshalText() ([]byte, error) { return t.appendTo(nil), nil }

func (t Token) appendTo(b []byte) []byte {
	b = strconv.AppendInt(b, t.Epoch, 10)
	b = append(b, ':')
	return strconv.AppendInt(b, t.Revision, 10)
}

// UnmarshalText parses the text form as strictly as Parse.
func (t *Token) UnmarshalText(b []byte) error {
	parsed, err := Parse(string(b))
	if err != nil {
		return err
	}
	*t = parsed
	return nil
}

// Compare returns -1, 0 or +1 as t is older than, equal to or newer than u.
func (t Token) Compare(u Token) int {
	if c := cmp.Compare(t.Epoch, u.Epoch); c != 0 {
		return c
	}
	return cmp.Compare(t.Revision, u.Revision)
}

// IsZero reports whether t is the zero Token, which Parse never returns.
func (t Token) IsZero() bool { return t == Token{} }

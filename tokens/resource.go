package tokens

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxResourceLen bounds resource names: they are primary keys in PostgreSQL
// and path segments in etcd, and arrive from untrusted requests.
const MaxResourceLen = 256

// CheckResource reports whether s is an acceptable resource name: 1 to
// MaxResourceLen bytes of valid UTF-8 without control or space characters
// other than ' ', without invisible (format) characters such as zero-width
// spaces or U+FFFD (what broken text decodes to), and without a space at
// either end. Names that differ only in what a reader cannot see would
// otherwise be two locks that look like one.
func CheckResource(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: empty", ErrBadResource)
	case len(s) > MaxResourceLen:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrBadResource, len(s), MaxResourceLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: not valid UTF-8", ErrBadResource)
	case s[0] == ' ' || s[len(s)-1] == ' ':
		return fmt.Errorf("%w: a space at either end", ErrBadResource)
	}
	for _, r := range s {
		switch {
		case unicode.IsControl(r) || (unicode.IsSpace(r) && r != ' '):
			return fmt.Errorf("%w: contains control or space character %U", ErrBadResource, r)
		case unicode.Is(unicode.Cf, r) || r == utf8.RuneError:
			return fmt.Errorf("%w: contains invisible character %U", ErrBadResource, r)
		}
	}
	return nil
}

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
// other than ' '.
func CheckResource(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: empty", ErrBadResource)
	case len(s) > MaxResourceLen:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrBadResource, len(s), MaxResourceLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: not valid UTF-8", ErrBadResource)
	}
	for _, r := range s {
		if unicode.IsControl(r) || (unicode.IsSpace(r) && r != ' ') {
			return fmt.Errorf("%w: contains control or space character %U", ErrBadResource, r)
		}
	}
	return nil
}

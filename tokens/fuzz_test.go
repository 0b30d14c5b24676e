package tokens

import (
	"errors"
	"testing"
)

// FuzzParse checks that Parse never panics, that every error is
// ErrMalformed, and that an accepted token has exactly one spelling: the
// input itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"1:42", "0:1", "1:", ":", "9223372036854775807:9223372036854775807", "1:9223372036854775808", "01:1", "1:-1", "1: 1", "１:1", "1:42:AQIDBAUGBwgJCgsMDQ4PEA", "1:42:AQIDBAUGBwgJCgsMDQ4PEB", "1:42:", "1:42:AQIDBAUGBwgJCgsMDQ4PE=", "1:42:1:42", "1:42#2", "1:42#0", "1:42#1001", "1:42#2:AQIDBAUGBwgJCgsMDQ4PEA", "1:42##2", "1#2:42"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse(%q) error %v is not ErrMalformed", s, err)
			}
			return
		}
		if tok.Epoch < 1 || tok.Revision < 1 || tok.Permit < 0 || tok.Permit > MaxPermits {
			t.Fatalf("Parse(%q) = %v: parts must be >= 1", s, tok)
		}
		if tok.String() != s {
			t.Fatalf("Parse(%q) = %v: not the canonical spelling", s, tok)
		}
	})
}

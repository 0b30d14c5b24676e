package authority_test

import (
	"errors"
	"testing"

	"github.com/fencegw/fencegw/authority"
)

// TestParseLeaseIDTakesOneSpelling: a lease id is read only as String
// writes it; case, sign and leading zeros make no aliases.
func TestParseLeaseIDTakesOneSpelling(t *testing.T) {
	for _, s := range []string{"1", "abc", "694d9a1b2c3d4e5f", "7fffffffffffffff"} {
		id, err := authority.ParseLeaseID(s)
		if err != nil || id.String() != s {
			t.Errorf("ParseLeaseID(%q) = %v, %v; want the id back", s, id, err)
		}
	}
	for _, s := range []string{"", "0", "00", "ABC", "Abc", "0abc", "+abc", "-1", "0x1", " 1", "1 ", "8000000000000000", "ffffffffffffffff", "g", "1_0"} {
		if id, err := authority.ParseLeaseID(s); !errors.Is(err, authority.ErrBadLeaseID) {
			t.Errorf("ParseLeaseID(%q) = %v, %v; want ErrBadLeaseID", s, id, err)
		}
	}
}

// FuzzParseLeaseID: whatever is parsed is positive and written back
// exactly as it was read; everything else is ErrBadLeaseID.
func FuzzParseLeaseID(f *testing.F) {
	for _, s := range []string{"1", "abc", "ABC", "0abc", "-1", "7fffffffffffffff", "8000000000000000", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := authority.ParseLeaseID(s)
		if err != nil {
			if !errors.Is(err, authority.ErrBadLeaseID) {
				t.Fatalf("ParseLeaseID(%q): %v, not ErrBadLeaseID", s, err)
			}
			return
		}
		if id <= 0 || id.String() != s {
			t.Fatalf("ParseLeaseID(%q) = %d, which is written %q", s, id, id.String())
		}
	})
}

package tokens

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Token
		ok   bool
	}{
		{"simple", "1:42", Token{1, 42}, true},
		{"large", "7:9223372036854775807", Token{7, 9223372036854775807}, true},
		{"no colon", "42", Token{}, false},
		{"empty", "", Token{}, false},
		{"empty epoch", ":42", Token{}, false},
		{"empty revision", "1:", Token{}, false},
		{"zero epoch", "0:42", Token{}, false},
		{"zero revision", "1:0", Token{}, false},
		{"leading zero", "1:042", Token{}, false},
		{"sign", "1:+42", Token{}, false},
		{"negative", "1:-42", Token{}, false},
		{"space", "1: 42", Token{}, false},
		{"trailing space", "1:42 ", Token{}, false},
		{"two colons", "1:4:2", Token{}, false},
		{"overflow", "1:9223372036854775808", Token{}, false},
		{"too long", "1:12345678901234567890", Token{}, false},
		{"hex", "1:0x2a", Token{}, false},
		{"unicode digit", "1:٤٢", Token{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.ok {
				if err != nil || got != tt.want {
					t.Fatalf("Parse(%q) = %v, %v; want %v, nil", tt.in, got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse(%q) = %v, %v; want ErrMalformed", tt.in, got, err)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	tests := []struct {
		a, b Token
		want int
	}{
		{Token{1, 41}, Token{1, 42}, -1},
		{Token{1, 42}, Token{1, 42}, 0},
		{Token{1, 43}, Token{1, 42}, 1},
		{Token{2, 1}, Token{1, 9999}, 1}, // a new epoch beats any old revision
		{Token{1, 9999}, Token{2, 1}, -1},
	}
	for _, tt := range tests {
		if got := tt.a.Compare(tt.b); got != tt.want {
			t.Errorf("%v.Compare(%v) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestStringRoundTrip(t *testing.T) {
	for _, tok := range []Token{{1, 1}, {1, 42}, {3, 9223372036854775807}} {
		got, err := Parse(tok.String())
		if err != nil || got != tok {
			t.Errorf("Parse(%q) = %v, %v; want %v", tok.String(), got, err, tok)
		}
	}
}

func TestCheckResource(t *testing.T) {
	long := make([]byte, MaxResourceLen+1)
	for i := range long {
		long[i] = 'a'
	}
	tests := []struct {
		in string
		ok bool
	}{
		{"account/acct-1", true},
		{"recon/2026-10-18", true},
		{"with space", true},
		{"", false},
		{string(long), false},
		{string(long[:MaxResourceLen]), true},
		{"tab\there", false},
		{"nl\n", false},
		{"bad\xff", false},
	}
	for _, tt := range tests {
		err := CheckResource(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("CheckResource(%q) = %v, want ok=%t", tt.in, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrBadResource) {
			t.Errorf("CheckResource(%q) = %v, want ErrBadResource", tt.in, err)
		}
	}
}

func TestLockKeyPrefixSeparatesNestedResources(t *testing.T) {
	// If "a" and "a/b" shared a prefix, a holder of "a/b" would count as a
	// contender for "a" and break mutual exclusion.
	a, ab := lockKeyPrefix("a"), lockKeyPrefix("a/b")
	if len(ab) >= len(a) && ab[:len(a)] == a {
		t.Fatalf("lock prefix %q is a prefix of %q", a, ab)
	}
}

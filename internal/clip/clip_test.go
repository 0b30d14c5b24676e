package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tt := range []struct {
		s    string
		max  int
		want string
	}{
		{"", 4, ""},
		{"abcd", 4, "abcd"},
		{"abcde", 4, "abcd…"},
		{"abcé", 4, "abc…"}, // é is two bytes: not cut in half
		{"ééé", 3, "é…"},
		{"\xff\xff\xff", 1, "\xff…"}, // invalid UTF-8 stays as it was, just shorter
		{"abc", -1, "…"},
	} {
		if got := String(tt.s, tt.max); got != tt.want {
			t.Errorf("String(%q, %d) = %q, want %q", tt.s, tt.max, got, tt.want)
		}
	}
}

func FuzzString(f *testing.F) {
	f.Add("account/acct-1", 8)
	f.Add("ééé", 3)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max > 1<<16 {
			return
		}
		got := String(s, max)
		if max < 0 {
			max = 0
		}
		if len(s) <= max {
			if got != s {
				t.Fatalf("String(%q, %d) = %q, want it unchanged", s, max, got)
			}
			return
		}
		short := strings.TrimSuffix(got, "…")
		if len(short) > max || !strings.HasPrefix(s, short) {
			t.Fatalf("String(%q, %d) = %q: not a prefix of at most %d bytes", s, max, got, max)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("String(%q, %d) = %q: cut a character in half", s, max, got)
		}
	})
}

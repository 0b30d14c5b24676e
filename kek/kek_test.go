package kek

import (
	"bytes"
	"encoding/base64"
	"errors"
	"regexp"
	"strings"
	"testing"
)

func line(b byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, Size)) }

// TestParse: a file of KEKs, one a line, the last the newest; comments
// and blank lines skipped; each fault named by its line, never quoted.
func TestParse(t *testing.T) {
	short := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 24))
	for _, tc := range []struct {
		name, file string
		want       []string // IDs, newest first
		err        string
	}{
		{"one", line(1) + "\n", []string{ID(bytes.Repeat([]byte{1}, Size))}, ""},
		{"two, the last newest", "# old\n" + line(1) + "\n\n  " + line(2) + "\r\n", []string{ID(bytes.Repeat([]byte{2}, Size)), ID(bytes.Repeat([]byte{1}, Size))}, ""},
		{"none", "# nothing\n\n", nil, ErrNoKEK.Error()},
		{"short", line(1) + "\n" + short + "\n", nil, "line 2 holds 24 bytes: a KEK is 32"},
		{"not base64", "#\n" + strings.Repeat("!", 44) + "\n", nil, "line 2 is not standard base64"},
		{"raw bytes", string(bytes.Repeat([]byte{0xfe}, Size)), nil, "line 1 is not standard base64"},
		{"repeated", line(3) + "\n" + line(3), nil, "line 2 repeats line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse([]byte(tc.file))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse = %v, want an error saying %q", err, tc.err)
				}
				if strings.Contains(err.Error(), short) || strings.Contains(err.Error(), line(3)) {
					t.Fatalf("Parse's error %q quotes the file", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.IDs(); strings.Join(got, ",") != strings.Join(tc.want, ",") || r.Newest() != tc.want[0] {
				t.Fatalf("IDs = %v, newest %s; want %v", got, r.Newest(), tc.want)
			}
		})
	}
}

// TestSealOpen: the newest KEK seals; every KEK of the ring opens what it
// sealed; a sealed key opens only for its name, unaltered, under a KEK
// the ring holds, and its errors quote nothing of it.
func TestSealOpen(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	old, err := Parse([]byte(line(1)))
	if err != nil {
		t.Fatal(err)
	}
	both, err := Parse([]byte(line(1) + "\n" + line(2)))
	if err != nil {
		t.Fatal(err)
	}
	newOnly, err := Parse([]byte(line(2)))
	if err != nil {
		t.Fatal(err)
	}
	underOld, err := old.Seal("k1", secret)
	if err != nil {
		t.Fatal(err)
	}
	underNew, err := both.Seal("k1", secret)
	if err != nil {
		t.Fatal(err)
	}
	if underNew.KEK != both.Newest() || underNew.KEK == underOld.KEK || bytes.Contains(underNew.Box, secret) {
		t.Fatalf("sealed under %s (newest %s, old %s), box holds the secret: %t", underNew.KEK, both.Newest(), underOld.KEK, bytes.Contains(underNew.Box, secret))
	}
	again, _ := both.Seal("k1", secret)
	if bytes.Equal(again.Box, underNew.Box) {
		t.Fatal("two seals of one secret are equal: the nonce is not fresh")
	}
	for _, tc := range []struct {
		name string
		ring *Ring
		key  string
		s    Sealed
		want error
	}{
		{"the old KEK, by a ring of both", both, "k1", underOld, nil},
		{"the new KEK, by a ring of both", both, "k1", underNew, nil},
		{"the old KEK, by a ring without it", newOnly, "k1", underOld, ErrUnknownKEK},
		{"another name", both, "k2", underNew, ErrOpen},
		{"altered", both, "k1", Sealed{KEK: underNew.KEK, Box: append(bytes.Clone(underNew.Box[:len(underNew.Box)-1]), underNew.Box[len(underNew.Box)-1]^1)}, ErrOpen},
		{"truncated", both, "k1", Sealed{KEK: underNew.KEK, Box: underNew.Box[:10]}, ErrOpen},
		{"a KEK ID that is none", both, "k1", Sealed{KEK: "secret-looking text", Box: underNew.Box}, ErrUnknownKEK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.ring.Open(tc.key, tc.s)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
			if tc.want == nil && !bytes.Equal(got, secret) {
				t.Fatalf("Open = %q, want the secret", got)
			}
			if err != nil && strings.Contains(err.Error(), "secret-looking") {
				t.Fatalf("Open's error %q quotes what it read", err)
			}
		})
	}
}

// TestNew: New's file parses to one fresh KEK, named in its comment.
func TestNew(t *testing.T) {
	a, b := New(), New()
	ra, err := Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(ra.IDs()) != 1 || ra.Newest() == rb.Newest() || !bytes.Contains(a, []byte(ra.Newest())) {
		t.Fatalf("New made %q (IDs %v) and a KEK of ID %s", a, ra.IDs(), rb.Newest())
	}
}

// FuzzParse: Parse never panics, and an error is one of its own
// sentences, with numbers for the parts that vary: it never quotes the
// file (a KEK file's lines are secrets).
func FuzzParse(f *testing.F) {
	for _, s := range []string{line(1), line(1) + "\n" + line(2), "# c\n", "", "\n\n" + line(9) + "\r\n", line(1) + "\n" + line(1), "AAAA", strings.Repeat("A", 44)} {
		f.Add([]byte(s))
	}
	sentence := regexp.MustCompile(`^kek: (line [0-9]+ (is not standard base64 \(a KEK a line: base64 of 32 random bytes\)|holds [0-9]+ bytes: a KEK is 32 \(base64 of 32 random bytes\)|repeats line [0-9]+)|the file holds no KEK .*)$`)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		switch {
		case err == nil && len(r.IDs()) == 0:
			t.Fatal("a ring without KEKs")
		case err != nil && !sentence.MatchString(err.Error()):
			t.Fatalf("Parse's error %q is not one of its sentences", err)
		}
	})
}

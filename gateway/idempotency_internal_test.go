package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzIdempotencyKey: a key is accepted only as 1 to 255 printable ASCII
// characters without quotes or backslashes, bare or in one pair of
// quotes, and is then exactly those characters; anything else is a
// bad request, never a panic.
func FuzzIdempotencyKey(f *testing.F) {
	for _, s := range []string{`"order-7"`, `order-7`, `""`, `"`, `"a\"b"`, `a b`, "\x00", `"x`, strings.Repeat("k", 256)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		r := &http.Request{Header: http.Header{IdempotencyHeader: {v}}}
		key, sent, err := idempotencyKey(r)
		if err != nil {
			if sent || key != "" {
				t.Fatalf("%q: refused (%v) yet reported %q sent", v, err, key)
			}
			return
		}
		if !sent || key == "" || len(key) > maxKeyLen || strings.ContainsAny(key, `"\`) {
			t.Fatalf("%q: accepted as %q", v, key)
		}
		for _, c := range []byte(key) {
			if c < 0x20 || c > 0x7e {
				t.Fatalf("%q: accepted %q with byte %#x", v, key, c)
			}
		}
		if v != key && v != `"`+key+`"` {
			t.Fatalf("%q: accepted as %q, which is neither it nor its quoted content", v, key)
		}
	})
}

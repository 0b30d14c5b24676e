package gateway

import (
	"net/url"
	"strings"
	"testing"
)

func TestDecodeUnreserved(t *testing.T) {
	for in, want := range map[string]string{
		"/v1/ops/debit":      "/v1/ops/debit",
		"/v1/ops/deb%69t":    "/v1/ops/debit",
		"/v1/%6Fps/%64ebit":  "/v1/ops/debit",
		"/v1/leases/a%2Fb":   "/v1/leases/a%2Fb",
		"/v1/leases/a%2fb":   "/v1/leases/a%2fb",
		"/x%7E%2D%2E%5F%20y": "/x~-._%20y",
		"/broken%6":          "/broken%6",
		"/broken%zz%":        "/broken%zz%",
	} {
		if got := decodeUnreserved(in); got != want {
			t.Errorf("decodeUnreserved(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzDecodeUnreserved: normalizing never changes what a valid escaped
// path decodes to, and leaves no escape of an unreserved character.
func FuzzDecodeUnreserved(f *testing.F) {
	for _, s := range []string{"/v1/ops/deb%69t", "/a%2Fb", "%", "%4", "%41%", "/%7e%7E"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := decodeUnreserved(s)
		if len(got) > len(s) {
			t.Fatalf("%q grew to %q", s, got)
		}
		want, err := url.PathUnescape(s)
		if err != nil {
			return
		}
		if dec, err := url.PathUnescape(got); err != nil || dec != want {
			t.Fatalf("%q normalized to %q, which decodes to %q (%v), not %q", s, got, dec, err, want)
		}
		for i := strings.IndexByte(got, '%'); i >= 0 && i+2 < len(got); i = nextPercent(got, i) {
			if c, ok := percentByte(got[i:]); ok && isUnreserved(c) {
				t.Fatalf("%q normalized to %q, which still escapes %q", s, got, c)
			}
		}
	})
}

func nextPercent(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '%')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

package gateway

import (
	"strconv"
	"testing"

	"github.com/fencegw/fencegw/authority"
)

// FuzzLastEventID: a Last-Event-ID is accepted only as this gateway
// writes an event ID, a positive decimal, and read back exactly.
func FuzzLastEventID(f *testing.F) {
	for _, seed := range []string{"1", "42", "0", "-1", "+5", "007", "abc", "", " 5", "9223372036854775807", "9223372036854775808", "1e3"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		n, err := lastEventID([]string{v})
		if err != nil {
			if n != 0 {
				t.Fatalf("refused %q, yet %d", v, n)
			}
			return
		}
		if n <= 0 || strconv.FormatInt(n, 10) != v {
			t.Fatalf("accepted %q as %d", v, n)
		}
	})
}

// FuzzWatchQuery: a watch's query names one resource, one prefix, never
// empty, or every lock, or is refused.
func FuzzWatchQuery(f *testing.F) {
	for _, seed := range []string{"resource=a", "prefix=a", "resource=a&prefix=b", "resource=", "prefix=%zz", "after=1", "resource=a&resource=a", "",
		"all=true", "all=", "all=false", "all=true&prefix=a", "all=true&all=true"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, q string) {
		o, err := watchQuery(q)
		if err != nil {
			if o != (authority.WatchOptions{}) {
				t.Fatalf("refused %q, yet %+v", q, o)
			}
			return
		}
		set := 0
		for _, named := range []bool{o.Resource != "", o.Prefix != "", o.All} {
			if named {
				set++
			}
		}
		if set != 1 {
			t.Fatalf("accepted %q as %+v: want exactly one of resource, prefix, all", q, o)
		}
	})
}

// FuzzDecodeValueRequest: a value update is one key, value, text.
func FuzzDecodeValueRequest(f *testing.F) {
	for _, seed := range []string{`{"value": "a"}`, `{"value": ""}`, `{}`, `{"value": 1}`, `{"value": "a", "value": "b"}`, `{"ttl": 1}`, `[]`, ``, `{"value": "\ud800"}`, "{\"value\": \"\xff\"}", `{"value": "a"} x`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		v, err := decodeValueRequest(body)
		if err != nil && v != "" {
			t.Fatalf("refused %q, yet %q", body, v)
		}
	})
}

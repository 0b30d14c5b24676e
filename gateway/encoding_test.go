package gateway_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestContentEncodingRefused: a body sent with any content coding but
// identity is refused with 415 before it is read, wherever the gateway
// reads bodies (writes, batches, lease requests), naming the coding and
// saying identity is what it takes (Accept-Encoding, RFC 9110 §15.5.16);
// nothing is written, no key is stored, no lock is taken. identity itself,
// in any case, is accepted.
func TestContentEncodingRefused(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const account = "acct-61"
	l := h.mustAcquire("account/"+account, 60, 0)
	defer h.release(l)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	fmt.Fprint(zw, debit(account, 1))
	zw.Close()
	keyed := tok(l.Token)
	keyed.Set("Idempotency-Key", `"encoding-1"`)
	lease := `{"resource": "account/acct-62", "ttl": 5}`

	tests := []struct {
		name, path, encoding string
		header               http.Header
		body                 string
	}{
		{"write, plain JSON labelled gzip", "/v1/ops/debit", "gzip", tok(l.Token), debit(account, 1)},
		{"write, gzip", "/v1/ops/debit", "gzip", tok(l.Token), gz.String()},
		{"write, br", "/v1/ops/debit", "br", tok(l.Token), debit(account, 1)},
		{"write, a list with identity", "/v1/ops/debit", "gzip, identity", tok(l.Token), debit(account, 1)},
		{"write, unknown coding", "/v1/ops/debit", "x-rot13", tok(l.Token), debit(account, 1)},
		{"write, no body", "/v1/ops/debit", "gzip", tok(l.Token), ""},
		{"keyed write", "/v1/ops/debit", "deflate", keyed, debit(account, 1)},
		{"batch", "/v1/batch", "gzip", nil, batchBody(batchWrite("debit", debit(account, 1), `"`+l.Token+`"`))},
		{"lease request", "/v1/leases", "gzip", nil, lease},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := tt.header.Clone()
			if hdr == nil {
				hdr = http.Header{}
			}
			hdr.Set("Content-Encoding", tt.encoding)
			before := h.state()
			r := h.do(http.MethodPost, tt.path, hdr, tt.body)
			if r.Status != http.StatusUnsupportedMediaType || r.Problem.Kind() != "unsupported-encoding" || r.Problem.Status != r.Status {
				t.Fatalf("Content-Encoding %s: %d %s, want 415 unsupported-encoding", tt.encoding, r.Status, r.Body)
			}
			if d := r.Problem.Detail; !strings.Contains(d, tt.encoding) || !strings.Contains(d, "identity") {
				t.Errorf("detail %q: want it to name %s and say only identity is accepted", d, tt.encoding)
			}
			if got := r.Header.Get("Accept-Encoding"); got != "identity" {
				t.Errorf("Accept-Encoding %q, want identity", got)
			}
			if after := h.state(); after != before {
				t.Fatalf("a refused request changed the database: %s -> %s", before, after)
			}
		})
	}
	// The refused keyed write stored nothing under its key: the same key
	// sent plainly applies, it is not a replay.
	if r := h.do(http.MethodPost, "/v1/ops/debit", keyed, debit(account, 1)); r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the key after its refusal: %d %s (replayed %q), want the write applied", r.Status, r.Body, r.Header.Get("Idempotent-Replayed"))
	}
	// The refused lease request took no lock.
	free := h.mustAcquire("account/acct-62", 5, 0)
	h.release(free)

	for _, encoding := range []string{"identity", "IDENTITY"} {
		hdr := tok(l.Token)
		hdr.Set("Content-Encoding", encoding)
		if r := h.do(http.MethodPost, "/v1/ops/debit", hdr, debit(account, 1)); r.Status != http.StatusOK {
			t.Errorf("Content-Encoding %s: %d %s, want the write applied", encoding, r.Status, r.Body)
		}
	}
	if got := h.balance(account); got != 997 {
		t.Fatalf("balance %d, want 997: only the keyed retry and the two identity writes applied", got)
	}
}

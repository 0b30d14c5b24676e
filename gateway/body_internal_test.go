package gateway

import (
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// oneByteThenTimeout is a body whose client announced far more than it
// sends: one byte, then the read deadline passes.
type oneByteThenTimeout struct{ sent bool }

func (b *oneByteThenTimeout) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		p[0] = '{'
		return 1, nil
	}
	return 0, errors.New("i/o timeout")
}

func (*oneByteThenTimeout) Close() error { return nil }

// TestAnnouncedBodiesCostWhatArrives: a request that announces a 64 KiB
// body and sends one byte makes the gateway allocate at most 1 KiB for
// it, not the announced length (3,000 such connections once cost 64 MiB);
// a body that does arrive is read whole, in one allocation when small.
func TestAnnouncedBodiesCostWhatArrives(t *testing.T) {
	g := &Gateway{maxBody: 64 << 10}
	const runs = 200
	reqs := make([]*http.Request, runs)
	for i := range reqs {
		reqs[i] = &http.Request{ContentLength: 64 << 10, Body: &oneByteThenTimeout{}}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, r := range reqs {
		if _, err := g.readBody(r); err == nil {
			t.Fatal("a body cut short was read without an error")
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 1<<10 {
		t.Fatalf("%d bytes allocated per stalled 64 KiB body, want at most 1 KiB", per)
	}

	for _, size := range []int{0, 100, initialBodyBuffer, 5000, 64 << 10} {
		want := strings.Repeat("x", size)
		r := &http.Request{ContentLength: int64(size), Body: io.NopCloser(strings.NewReader(want))}
		got, err := g.readBody(r)
		if err != nil || string(got) != want {
			t.Fatalf("a %d-byte body: %d bytes, %v", size, len(got), err)
		}
	}
}

// TestIdentityOnly: no Content-Encoding, or identity in any case and list
// shape, is a plain body; any other coding, alone or in a list, is not.
func TestIdentityOnly(t *testing.T) {
	for _, tt := range []struct {
		name   string
		values []string
		ok     bool
	}{
		{"absent", nil, true},
		{"identity", []string{"identity"}, true},
		{"in capitals", []string{"IDENTITY"}, true},
		{"a list of identity with empty elements", []string{" identity , ,identity"}, true},
		{"empty", []string{""}, true},
		{"gzip", []string{"gzip"}, false},
		{"identity then gzip", []string{"identity, gzip"}, false},
		{"gzip on a second line", []string{"identity", "gzip"}, false},
		{"unknown", []string{"x-rot13"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := identityOnly(http.Header{"Content-Encoding": tt.values})
			if got := err == nil; got != tt.ok || (err != nil && !errors.Is(err, ErrContentEncoding)) {
				t.Errorf("identityOnly(%q) = %v, want accepted %t", tt.values, err, tt.ok)
			}
		})
	}
}

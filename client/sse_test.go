package client

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestSSEReader: fields, comments, multi-line data and every line end;
// an id alone is read (it moves the last event ID on), an event with
// neither data nor id is not, and one cut off by the end of the stream is
// dropped.
func TestSSEReader(t *testing.T) {
	stream := ": watching\n\nid: 7\nevent: granted\ndata: {\"a\":1}\n\n: heartbeat\r\n\r\nevent:value\rdata: x\rdata: y\r\rid: 8\n: progress\n\nevent: lone\n\nid: 9\nevent: cut"
	r := newSSEReader(strings.NewReader(stream))
	want := []sseMessage{{ID: "7", Event: "granted", Data: `{"a":1}`}, {Event: "value", Data: "x\ny"}, {ID: "8"}}
	for i, w := range want {
		m, err := r.next()
		if err != nil || m != w {
			t.Fatalf("event %d: got %+v, %v; want %+v", i, m, err, w)
		}
	}
	if m, err := r.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last event: %+v, %v; want io.EOF", m, err)
	}
}

// FuzzSSEReader feeds the reader arbitrary streams: it never panics,
// always ends, and returns data only of events that ended.
func FuzzSSEReader(f *testing.F) {
	for _, seed := range []string{
		"id: 7\nevent: granted\ndata: {}\n\n", ": c\n\n", "data\n\n", "data:\r\n\r\n", "id: \x00\ndata: x\n\n",
		"event: a\rdata: b\r\r", strings.Repeat("x", 70000) + "\n\n", "data: a\ndata: b\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := newSSEReader(strings.NewReader(string(stream)))
		for range len(stream) + 1 {
			m, err := r.next()
			if err != nil {
				return
			}
			if strings.ContainsRune(m.ID, 0) {
				t.Fatalf("an id with NUL: %q", m.ID)
			}
		}
		t.Fatalf("more events than bytes in %q", stream)
	})
}

package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// FuzzReadHistory checks that ReadHistory never panics, that every
// content error is ErrMalformed, and that accepted events survive a
// round trip: written back as JSON lines, they read back the same.
func FuzzReadHistory(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		events, err := ReadHistory(bytes.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("ReadHistory error %v is not ErrMalformed", err)
			}
			return
		}
		first := marshalLines(t, events)
		again, err := ReadHistory(bytes.NewReader(first))
		if err != nil {
			t.Fatalf("ReadHistory of its own output %q: %v", first, err)
		}
		if !slices.EqualFunc(events, again, sameEvent) {
			t.Fatalf("round trip changed the events:\n%+v\n%+v", events, again)
		}
		if second := marshalLines(t, again); !bytes.Equal(first, second) {
			t.Fatalf("round trip changed the JSON:\n%s\n%s", first, second)
		}
	})
}

func marshalLines(t *testing.T, events []Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			t.Fatalf("Encode(%+v): %v", e, err)
		}
	}
	return buf.Bytes()
}

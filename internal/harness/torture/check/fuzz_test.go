package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"testing"
)

// FuzzReadHistory checks that ReadHistory never panics, that every
// content error is ErrMalformed, and that accepted events survive a
// round trip: written back as JSON lines, they read back the same.
func FuzzReadHistory(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) { roundTrip(t, in, ReadHistory, sameEvent) })
}

// FuzzReadGrants holds ReadGrants to the same.
func FuzzReadGrants(f *testing.F) {
	f.Add([]byte(`{"worker":1,"resource":"churn/r0","token":"1:10","asked":"2026-01-02T03:04:05Z","granted":"2026-01-02T03:04:06Z","end":"release"}` + "\n"))
	f.Fuzz(func(t *testing.T, in []byte) { roundTrip(t, in, ReadGrants, sameGrant) })
}

// roundTrip reads in with read, and what it accepted back from its JSON
// lines, which must be the same values and the same bytes again.
func roundTrip[T any](t *testing.T, in []byte, read func(io.Reader) ([]T, error), same func(a, b T) bool) {
	values, err := read(bytes.NewReader(in))
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("read error %v is not ErrMalformed", err)
		}
		return
	}
	first := marshalLines(t, values)
	again, err := read(bytes.NewReader(first))
	if err != nil {
		t.Fatalf("read of its own output %q: %v", first, err)
	}
	if !slices.EqualFunc(values, again, same) {
		t.Fatalf("round trip changed the values:\n%+v\n%+v", values, again)
	}
	if second := marshalLines(t, again); !bytes.Equal(first, second) {
		t.Fatalf("round trip changed the JSON:\n%s\n%s", first, second)
	}
}

func marshalLines[T any](t *testing.T, values []T) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, v := range values {
		if err := enc.Encode(v); err != nil {
			t.Fatalf("Encode(%+v): %v", v, err)
		}
	}
	return buf.Bytes()
}

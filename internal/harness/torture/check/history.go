package check

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Event is one line of a worker's history (JSON lines).
type Event struct {
	Time     time.Time `json:"time"`
	Worker   int       `json:"worker"`
	Type     string    `json:"type"`   // "invoke" before sending a write; then exactly one of "ok" (200), "fail" (a definite refusal: nothing was applied), "info" (outcome unknown: timeout, connection error, 503 with outcome "unknown")
	Intent   string    `json:"intent"` // unique id of one intended write
	Resource string    `json:"resource"`
	Token    string    `json:"token"`            // "E:R": histories are kept as evidence, and a signed token is a capability
	Detail   string    `json:"detail,omitempty"` // e.g. the problem kind "stale-token", or an error
	// Lease, on an invoke, is what the worker's client said of the
	// write's lease as it was sent (leaseview.go); zero: not recorded.
	Lease LeaseView `json:"lease,omitzero"`
	// Attempt numbers the attempts of one write under its idempotency
	// key (the intent), from 1, on each attempt's invoke and answer; 0:
	// not recorded. A worker retries an unknown outcome with the same
	// key, and attempts may overlap (keys.go).
	Attempt int `json:"attempt,omitempty"`
	// Status, Replayed and Answer are what came back, on an answer: the
	// HTTP status (0: none came), whether it said Idempotent-Replayed:
	// true, and a digest of its body, by which a key's answers are held
	// to agree.
	Status   int    `json:"status,omitempty"`
	Replayed bool   `json:"replayed,omitempty"`
	Answer   string `json:"answer,omitempty"`
}

// The event types a history may hold.
const (
	TypeInvoke = "invoke"
	TypeOK     = "ok"
	TypeFail   = "fail"
	TypeInfo   = "info"
)

// ErrMalformed is wrapped by every ReadHistory error about a line's content.
var ErrMalformed = errors.New("check: malformed history")

// ReadHistory reads one worker's history, one JSON Event per line; blank
// lines are skipped. A final line that ends without a newline in the middle
// of its JSON is ignored: the worker was killed while writing it. Any other
// malformed line is an error that names its line number and wraps
// ErrMalformed. Read each worker's file separately: only the end of a file
// can be torn, so a torn line in the middle of concatenated files is an error.
func ReadHistory(r io.Reader) ([]Event, error) { return readLines(r, parseEvent) }

// readLines reads JSON lines, each decoded by parse, as ReadHistory says:
// blank lines skipped, a torn final line ignored, any other malformed
// line an error wrapping ErrMalformed.
func readLines[T any](r io.Reader, parse func([]byte) (T, error)) ([]T, error) {
	br := bufio.NewReader(r)
	var out []T
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("check: read line %d: %w", n, err)
		}
		final := err != nil
		if len(bytes.TrimSpace(line)) > 0 {
			v, err := parse(line)
			switch {
			case err == nil:
				out = append(out, v)
			case final && errors.Is(err, io.ErrUnexpectedEOF):
				// Dropping a torn outcome turns an "ok" into an unknown
				// outcome, which the checks treat more leniently, never
				// more strictly: a torn line cannot create a violation.
			default:
				return nil, fmt.Errorf("%w: line %d: %w", ErrMalformed, n, err)
			}
		}
		if final {
			return out, nil
		}
	}
}

// parseEvent decodes one line strictly, so that a history written by a
// different version of the worker fails loudly instead of losing fields.
func parseEvent(line []byte) (Event, error) {
	ev, err := decodeStrict[Event](line)
	if err != nil {
		return Event{}, err
	}
	switch ev.Type {
	case TypeInvoke, TypeOK, TypeFail, TypeInfo:
	default:
		return Event{}, fmt.Errorf("unknown event type %q", ev.Type)
	}
	if ev.Intent == "" {
		return Event{}, errors.New("event without an intent")
	}
	return ev, nil
}

// decodeStrict decodes one JSON value that is all of line, with no field
// T lacks.
func decodeStrict[T any](line []byte) (T, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var v T
	if err := dec.Decode(&v); err != nil {
		return v, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return v, errors.New("trailing data after the value")
	}
	return v, nil
}

package check

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	lineInvoke = `{"time":"2026-01-02T03:04:05Z","worker":1,"type":"invoke","intent":"a","resource":"r","token":"1:10"}`
	lineOK     = `{"time":"2026-01-02T03:04:06.5+01:00","worker":1,"type":"ok","intent":"a","resource":"r","token":"1:10"}`
	lineFail   = `{"time":"2026-01-02T03:04:07Z","worker":1,"type":"fail","intent":"b","resource":"r","token":"1:10","detail":"stale-token"}`
)

func TestReadHistory(t *testing.T) {
	invoke := Event{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Worker: 1, Type: TypeInvoke, Intent: "a", Resource: "r", Token: "1:10"}
	ok := Event{Time: time.Date(2026, 1, 2, 2, 4, 6, 5e8, time.UTC), Worker: 1, Type: TypeOK, Intent: "a", Resource: "r", Token: "1:10"}
	fail := Event{Time: time.Date(2026, 1, 2, 3, 4, 7, 0, time.UTC), Worker: 1, Type: TypeFail, Intent: "b", Resource: "r", Token: "1:10", Detail: "stale-token"}
	tests := []struct {
		name     string
		in       string
		want     []Event
		wantLine string // non-empty: an error naming this line
	}{
		{"empty", "", nil, ""},
		{"lines", lineInvoke + "\n" + lineOK + "\n" + lineFail + "\n", []Event{invoke, ok, fail}, ""},
		{"final line without newline", lineInvoke + "\n" + lineOK, []Event{invoke, ok}, ""},
		{"blank lines and CRLF", "\n" + lineInvoke + "\r\n  \n" + lineOK + "\n", []Event{invoke, ok}, ""},
		{"truncated final line ignored", lineInvoke + "\n" + lineOK[:40], []Event{invoke}, ""},
		{"truncated final line in a string", lineInvoke + "\n" + lineFail[:len(lineFail)-8], []Event{invoke}, ""},
		{"truncated line in the middle", lineInvoke + "\n" + lineOK[:40] + "\n" + lineFail + "\n", nil, "line 2"},
		{"truncated final line with its newline", lineInvoke + "\n" + lineOK[:40] + "\n", nil, "line 2"},
		{"malformed final line", lineInvoke + "\n" + "not json", nil, "line 2"},
		{"malformed middle line", lineInvoke + "\n" + "{]\n" + lineOK + "\n", nil, "line 2"},
		{"unknown type", lineInvoke + "\n\n" + strings.Replace(lineOK, `"ok"`, `"done"`, 1) + "\n", nil, "line 3"},
		{"missing type", `{"worker":1,"intent":"a"}` + "\n", nil, "line 1"},
		{"missing intent", `{"worker":1,"type":"ok"}` + "\n", nil, "line 1"},
		{"unknown field", strings.Replace(lineInvoke, `"worker"`, `"attempts":2,"worker"`, 1) + "\n", nil, "line 1"},
		{"two events on one line", lineInvoke + lineOK + "\n", nil, "line 1"},
		{"wrong field type", `{"worker":"1","type":"ok","intent":"a"}` + "\n", nil, "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadHistory(strings.NewReader(tt.in))
			if tt.wantLine != "" {
				if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.wantLine+":") {
					t.Fatalf("ReadHistory error = %v, want ErrMalformed naming %s", err, tt.wantLine)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadHistory: %v", err)
			}
			if !slices.EqualFunc(got, tt.want, sameEvent) {
				t.Errorf("ReadHistory = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// sameEvent compares instants, not time.Time values: the same instant
// read with another offset has another Location.
func sameEvent(a, b Event) bool {
	if !a.Time.Equal(b.Time) {
		return false
	}
	a.Time, b.Time = time.Time{}, time.Time{}
	return a == b
}

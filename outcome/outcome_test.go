package outcome_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/fencegw/fencegw/outcome"
)

var (
	errRefused    = outcome.New("refused", outcome.Refused)
	errSettling   = outcome.NewSettling("stale")
	errNotApplied = outcome.New("not applied", outcome.NotApplied)
	errUnknown    = outcome.New("unknown", outcome.Unknown)
)

// issuedRefusal is a typed refusal whose settling depends on its data, as
// tokens.RejectedError's does.
type issuedRefusal struct{ issued bool }

func (e *issuedRefusal) Error() string            { return "rejected" }
func (e *issuedRefusal) Outcome() outcome.Outcome { return outcome.Refused }
func (e *issuedRefusal) SettlesKey() bool         { return e.issued }
func (e *issuedRefusal) Unwrap() error            { return errRefused }

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		want    outcome.Outcome
		settles bool
	}{
		{"nil", nil, outcome.Applied, false},
		{"undeclared", errors.New("who knows"), outcome.Unknown, false},
		{"a sentinel", errRefused, outcome.Refused, false},
		{"wrapped", fmt.Errorf("op: %w", errNotApplied), outcome.NotApplied, false},
		{"unknown wins over not applied", fmt.Errorf("%w (%w)", errNotApplied, errUnknown), outcome.Unknown, false},
		{"unknown wins over a refusal", fmt.Errorf("%w (%w)", errSettling, errUnknown), outcome.Unknown, true},
		{"a refusal wins over not applied", fmt.Errorf("%w: %w", errNotApplied, errSettling), outcome.Refused, true},
		{"a settling refusal", fmt.Errorf("write 1: %w", errSettling), outcome.Refused, true},
		{"a typed refusal decides before its sentinel", &issuedRefusal{issued: true}, outcome.Refused, true},
		{"a typed refusal that does not settle", &issuedRefusal{}, outcome.Refused, false},
		{"an undeclared cause under a declared error", fmt.Errorf("%w: %w", errNotApplied, errors.New("dial tcp")), outcome.NotApplied, false},
		{"a join", errors.Join(errors.New("x"), errRefused), outcome.Refused, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outcome.Of(tc.err); got != tc.want {
				t.Errorf("Of = %v, want %v", got, tc.want)
			}
			if got := outcome.SettlesKey(tc.err); got != tc.settles {
				t.Errorf("SettlesKey = %v, want %v", got, tc.settles)
			}
		})
	}
}

func TestDeclared(t *testing.T) {
	if outcome.Declared(errors.New("x")) || outcome.Declared(nil) {
		t.Error("an undeclared error declared")
	}
	if !outcome.Declared(fmt.Errorf("a: %w", errors.Join(errors.New("x"), errUnknown))) {
		t.Error("a declaration deep in the tree not found")
	}
}

func TestString(t *testing.T) {
	for o, want := range map[outcome.Outcome]string{outcome.Applied: "applied", outcome.Refused: "refused", outcome.NotApplied: "not-applied", outcome.Unknown: "unknown"} {
		if o.String() != want {
			t.Errorf("%d: %q, want %q", o, o.String(), want)
		}
	}
}

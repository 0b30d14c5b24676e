package gateway

import (
	"slices"
	"testing"

	"github.com/fencegw/fencegw/policy"
)

// TestProblemTypesAreOneTable: every kind appears once, and problemTypeOf
// finds each; an unknown kind (a typo in a set call) falls back to
// internal, which the rejection tests of each kind would then show.
func TestProblemTypesAreOneTable(t *testing.T) {
	seen := map[string]bool{}
	for _, pt := range problemTypes {
		if seen[pt.Kind] {
			t.Errorf("kind %s twice", pt.Kind)
		}
		seen[pt.Kind] = true
		if got := problemTypeOf(pt.Kind); got != pt || pt.Status < 400 || pt.Title == "" || pt.When == "" {
			t.Errorf("problemTypeOf(%s) = %+v", pt.Kind, got)
		}
	}
	if got := problemTypeOf("no-such-kind"); got.Kind != "internal" {
		t.Errorf("an unknown kind reads as %s, want internal", got.Kind)
	}
}

// TestOwnKindsAreReserved: a policy's sql_errors may not map an
// application's refusal to a problem type clients act on. policy keeps
// that list by hand; every kind of the gateway's table must be either in
// it or in shared below (the kinds an application may mean too), and
// neither list may name a kind the table lacks.
func TestOwnKindsAreReserved(t *testing.T) {
	shared := map[string]bool{"bad-request": true, "forbidden": true, "precondition-failed": true, "constraint": true}
	reserved := policy.ReservedKinds()
	for _, pt := range problemTypes {
		if isReserved := slices.Contains(reserved, pt.Kind); isReserved == shared[pt.Kind] {
			t.Errorf("%s: reserved by policy %v, shared with applications %v: want exactly one", pt.Kind, isReserved, shared[pt.Kind])
		}
	}
	for kind := range shared {
		if problemTypeOf(kind).Kind != kind {
			t.Errorf("%s is listed as shared with applications, but the gateway never answers it", kind)
		}
	}
	for _, kind := range reserved {
		if problemTypeOf(kind).Kind != kind {
			t.Errorf("policy reserves %s, which the gateway never answers", kind)
		}
	}
}

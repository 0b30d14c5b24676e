package gateway

import "testing"

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

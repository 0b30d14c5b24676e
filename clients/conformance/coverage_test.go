package conformance_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway"
)

// TestInjectedCasesCoverEveryProblemType: problem-types-injected serves
// every problem type the gateway's OpenAPI document lists, so that a
// type the gateway gains fails the suite until every client has a typed
// error for it and the scenario serves it.
func TestInjectedCasesCoverEveryProblemType(t *testing.T) {
	var cases []string
	for _, sc := range loadScenarios(t).Scenarios {
		if sc.ID == "problem-types-injected" {
			for _, c := range sc.Cases {
				cases = append(cases, c.Case)
			}
		}
	}
	types := gateway.ProblemTypes()
	if len(types) < 20 {
		t.Fatalf("%d problem types: the test no longer reads them", len(types))
	}
	for _, typ := range types {
		if kind := strings.TrimPrefix(typ, "urn:fencegw:problem:"); !slices.Contains(cases, kind) {
			t.Errorf("problem type %s is not among problem-types-injected's cases", kind)
		}
	}
}

// TestEveryScenarioHasTheHarnessPart: each scenario of the file has its
// part here, and each part its scenario.
func TestEveryScenarioHasTheHarnessPart(t *testing.T) {
	ids := map[string]bool{}
	for _, sc := range loadScenarios(t).Scenarios {
		ids[sc.ID] = true
		if _, ok := harnesses[sc.ID]; !ok {
			t.Errorf("scenario %s has no part in the harness", sc.ID)
		}
	}
	for id := range harnesses {
		if !ids[id] {
			t.Errorf("the harness has a part for %s, which scenarios.json lacks", id)
		}
	}
}

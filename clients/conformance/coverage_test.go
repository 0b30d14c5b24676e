package conformance_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/policy"
)

// TestInjectedCasesCoverEveryProblemType: problem-types-injected serves
// every problem type the gateway's OpenAPI document lists, so that a
// type the gateway gains fails the suite until every client has a typed
// error for it and the scenario serves it.
func TestInjectedCasesCoverEveryProblemType(t *testing.T) {
	pol, err := policy.Parse("policy.yaml", []byte(conformancePolicy(t)))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := gateway.OpenAPI(pol, "test")
	if err != nil {
		t.Fatal(err)
	}
	var api struct {
		Components struct {
			Schemas struct {
				Problem struct {
					Properties struct {
						Type struct {
							Enum []string `json:"enum"`
						} `json:"type"`
					} `json:"properties"`
				} `json:"Problem"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &api); err != nil {
		t.Fatal(err)
	}
	var cases []string
	for _, sc := range loadScenarios(t).Scenarios {
		if sc.ID == "problem-types-injected" {
			for _, c := range sc.Cases {
				cases = append(cases, c.Case)
			}
		}
	}
	types := api.Components.Schemas.Problem.Properties.Type.Enum
	if len(types) < 20 {
		t.Fatalf("%d problem types in the OpenAPI document: the test no longer reads them", len(types))
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

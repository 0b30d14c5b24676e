package client

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/policy"
)

// TestEveryProblemTypeHasASentinel: every problem type the gateway's
// OpenAPI document lists decodes to an error that is the sentinel of its
// kind, so that a caller can tell each one apart with errors.Is.
func TestEveryProblemTypeHasASentinel(t *testing.T) {
	pol, err := policy.Load("../testdata/demo/policy.yaml")
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
	types := api.Components.Schemas.Problem.Properties.Type.Enum
	if len(types) < 20 {
		t.Fatalf("%d problem types in the OpenAPI document: the test no longer reads them", len(types))
	}
	for _, typ := range types {
		kind := strings.TrimPrefix(typ, problemTypePrefix)
		sentinel, ok := kindErrors[kind]
		if !ok {
			t.Errorf("problem type %s has no sentinel", kind)
			continue
		}
		err := decodeError(409, "application/problem+json", []byte(`{"type":"`+typ+`","status":409}`))
		if !errors.Is(err, sentinel) {
			t.Errorf("problem type %s decodes to %v, which is not %v", kind, err, sentinel)
		}
	}
}

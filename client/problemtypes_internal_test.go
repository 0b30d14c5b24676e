package client

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway"
)

// TestEveryProblemTypeHasASentinel: every problem type the gateway
// answers (the list its OpenAPI document gives) decodes to an error that is the sentinel of its
// kind, so that a caller can tell each one apart with errors.Is.
func TestEveryProblemTypeHasASentinel(t *testing.T) {
	types := gateway.ProblemTypes()
	if len(types) < 20 {
		t.Fatalf("%d problem types: the test no longer reads them", len(types))
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

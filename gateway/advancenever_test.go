package gateway_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestAdvanceANeverWrittenResource: a resource nobody ever wrote has no
// fence to show: the advance's answer says before: null (as a fenced
// read says fence: null), not a token of revision 0 that no token
// pattern admits, and the answer matches the OpenAPI document.
func TestAdvanceANeverWrittenResource(t *testing.T) {
	yaml := demoPolicy(t, "monotonic")
	router := openAPIRouter(t, yaml)
	h := newHarness(t, yaml)
	const resource = "account/acct-97"
	for _, dryRun := range []bool{true, false} {
		r, out := h.advance(resource, dryRun)
		if r.Status != http.StatusOK {
			t.Fatalf("advance (dry run %t): %d %s", dryRun, r.Status, r.Body)
		}
		if before, ok := out["before"]; !ok || before != nil {
			t.Fatalf("advance (dry run %t): before %v (present %t), want null: %s", dryRun, before, ok, r.Body)
		}
		body := `{"resource": "` + resource + `", "reason": "bad holder", "dry_run": false}`
		req, _ := http.NewRequest(http.MethodPost, h.base+"/v1/admin/fences/advance", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		checkAnswer(t, router, req, r)
	}
}

package gateway

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode"
)

// FuzzDecodeAdminRequest: the operator's request parser never panics,
// refuses only with bad requests, and what it accepts is a JSON object
// encoding/json reads the same, with a reason of one line.
func FuzzDecodeAdminRequest(f *testing.F) {
	for _, s := range []string{
		`{"resource": "account/acct-1", "reason": "stuck", "dry_run": true}`, `{"lease_id": "abc", "reason": "x"}`,
		`{"resource": "a", "resource": "b", "reason": "x"}`, `{"resource": "a"}`, `{"resource": "a", "reason": ""}`,
		`{"resource": "a", "reason": "a\nb"}`, `{"reason": "x", "dry_run": "yes"}`, `{"reason": "x"} {}`, `{"reason": ["x"]}`,
		"{\"reason\": \"\xff\"}", `{"reason": "\ud800"}`, `[]`, `{`, `{"force": 1, "reason": "x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeAdminRequest(body, "resource", "lease_id", "reason", "dry_run")
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("decodeAdminRequest(%q) = %v: not a bad request", body, err)
			}
			return
		}
		if strings.TrimSpace(req.Reason) == "" || len(req.Reason) > maxReasonBytes || strings.ContainsFunc(req.Reason, unicode.IsControl) {
			t.Fatalf("accepted reason %q", req.Reason)
		}
		var theirs struct {
			Resource string `json:"resource"`
			LeaseID  string `json:"lease_id"`
			Reason   string `json:"reason"`
			DryRun   bool   `json:"dry_run"`
		}
		if err := json.Unmarshal(body, &theirs); err != nil || theirs != (struct {
			Resource string `json:"resource"`
			LeaseID  string `json:"lease_id"`
			Reason   string `json:"reason"`
			DryRun   bool   `json:"dry_run"`
		}{req.Resource, req.LeaseID, req.Reason, req.DryRun}) {
			t.Fatalf("accepted %q as %+v; encoding/json reads %+v (%v)", body, req, theirs, err)
		}
	})
}

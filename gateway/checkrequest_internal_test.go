package gateway

import (
	"testing"
	"unicode/utf8"
)

// FuzzDecodeCheckRequest: any body is either refused with a bad request or
// read into at least one resource, each a valid resource name, roles
// sorted and unique, and at most maxCheckRoles of them.
func FuzzDecodeCheckRequest(f *testing.F) {
	for _, seed := range []string{
		`{"resource": "account/acct-1"}`,
		`{"resources": {"from": "account/acct-1", "to": "account/acct-2"}}`,
		`{"resources": {}}`, `{"resource": 1}`, `{"resource": "a", "resource": "b"}`, `[]`, ``, `{"resources": {"A": "x"}}`,
		"{\"resource\": \"\xff\"}", `{"resource": "\ud800"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		roles, err := decodeCheckRequest(body)
		if err != nil {
			if roles != nil {
				t.Fatalf("roles %v with error %v", roles, err)
			}
			return
		}
		if len(roles) == 0 || len(roles) > maxCheckRoles {
			t.Fatalf("%d roles from %q", len(roles), body)
		}
		for i, r := range roles {
			if !utf8.ValidString(r.resource) || r.resource == "" {
				t.Fatalf("resource %q from %q", r.resource, body)
			}
			if i > 0 && roles[i-1].role >= r.role {
				t.Fatalf("roles not sorted and unique: %v", roles)
			}
		}
	})
}

package gateway

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/tokens"
)

// FuzzParseTokenField holds the Fencing-Token parser to its contract: it
// never panics, every refusal is a bad request or a malformed token, and
// an accepted field means what it says: written back in canonical form,
// it parses to the same roles and tokens.
func FuzzParseTokenField(f *testing.F) {
	for _, s := range []string{
		"1:42", ` from="1:42", to="1:57" `, `from="1:42",to="1:57"`, "from=\"1:42\",\tto=\"1:57\"",
		`from="1:42", from="1:43"`, `from=1:42`, `from`, `from="1:42";a=1`, `from="1:42",`, `,`, `=`,
		`from="1:42"to="1:2"`, `a-b.c*="1:1"`, `from="\"1:42\""`, `from="1:4\2"`, "from=\"1:42\x7f\"", `*="1:1"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		field, err := parseTokenField(s)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) && !errors.Is(err, tokens.ErrMalformed) {
				t.Fatalf("parseTokenField(%q) = %v: neither a bad request nor a malformed token", s, err)
			}
			return
		}
		if field.roles == nil {
			if field.single.IsZero() {
				t.Fatalf("parseTokenField(%q) accepted no token", s)
			}
			return
		}
		parts := make([]string, len(field.roles))
		for i, rt := range field.roles {
			parts[i] = rt.role + "=" + strconv.Quote(rt.tok.String())
		}
		again, err := parseTokenField(strings.Join(parts, ", "))
		if err != nil || len(again.roles) != len(field.roles) {
			t.Fatalf("%q: its canonical form %q parses to %+v, %v", s, strings.Join(parts, ", "), again, err)
		}
		for i := range again.roles {
			if again.roles[i] != field.roles[i] {
				t.Fatalf("%q: role %d is %+v, then %+v", s, i, field.roles[i], again.roles[i])
			}
		}
	})
}

package policy

import (
	"errors"
	"strings"
	"testing"
)

const sqlClients = `clients:
  billing:
    token_sha256: "` + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + `"
    sql_role: billing_app
    sql_resources: [account]
  http_only:
    token_sha256: "` + "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" + `"
    operations: [run]
`

// TestSQLClients: a client of the SQL front alone needs no operations;
// it may fence (and lease) the names of its sql_resources and no other,
// and a client without sql_role may not use the front.
func TestSQLClients(t *testing.T) {
	p := mustParse(t, goodPolicy+sqlClients)
	var b, h *Client
	for _, c := range p.clientsByName() {
		switch c.Name {
		case "billing":
			b = c
		case "http_only":
			h = c
		}
	}
	if b.SQLRole() != "billing_app" || h.SQLRole() != "" {
		t.Fatalf("SQLRole: billing %q, http_only %q; want billing_app and none", b.SQLRole(), h.SQLRole())
	}
	for _, tc := range []struct {
		name, resource string
		want           error // nil: the kind account
	}{
		{"its resource", "account/acct-1", nil},
		{"another kind", "job/mon/1", ErrLeaseNotAllowed},
		{"no resource at all", "elsewhere/1", ErrUnknownLease},
	} {
		k, err := p.SQLResource(b, tc.resource)
		switch {
		case tc.want == nil && (err != nil || k.Name != "account"):
			t.Errorf("%s: %v %v, want account", tc.name, k, err)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := p.SQLResource(h, "account/acct-1"); !errors.Is(err, ErrLeaseNotAllowed) {
		t.Errorf("a client without sql_resources fencing: %v, want ErrLeaseNotAllowed", err)
	}
	if k, err := p.Lease(b, "account/acct-9"); err != nil || k.ResourceKind.Name != "account" {
		t.Errorf("billing leasing what it fences: %v %v, want the account kind", k, err)
	}
	if d := p.Describe(); !strings.Contains(d, "client billing may use the SQL front as role billing_app, fencing: account") {
		t.Errorf("Describe does not say what billing may do on the front:\n%s", d)
	}
}

// TestSQLClientMistakes: each mistake in sql_role or sql_resources is
// named where it is.
func TestSQLClientMistakes(t *testing.T) {
	tok := `token_sha256: "` + strings.Repeat("c", 64) + `"`
	for _, tc := range []struct{ name, client, want string }{
		{"resources without a role", "{" + tok + ", operations: [run], sql_resources: [account]}", "clients.c.sql_resources: a client fences from the SQL front as its sql_role"},
		{"a quoted-only role name", "{" + tok + ", sql_role: Billing}", "clients.c.sql_role: want a PostgreSQL role name"},
		{"a role of PostgreSQL's", "{" + tok + ", sql_role: pg_write_all_data}", "is not an application's role"},
		{"the gateway's role", "{" + tok + ", sql_role: fencegw_gateway}", "is not an application's role"},
		{"an unknown kind", "{" + tok + ", sql_role: app, sql_resources: [ledger]}", `unknown kind "ledger"`},
		{"neither operations nor a role", "{" + tok + "}", "missing: list the operations"},
	} {
		_, err := Parse("test.yaml", []byte(goodPolicy+"clients:\n  c: "+tc.client+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

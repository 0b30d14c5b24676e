package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/internal/harness/testcerts"
)

const identityClients = `
clients:
  billing:
    certificate: {uri: "spiffe://example.org/ns/billing/sa/billing"}
    operations: [debit]
  reports:
    certificate: {dns: Reports.Example.org}
    operations: [run]
  operator:
    certificate: {cn: operator}
    token_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    operations: ["*"]
  pod:
    jwt: {subject: "system:serviceaccount:billing:billing"}
    operations: [debit]
`

func TestClientByCertificate(t *testing.T) {
	p := mustParse(t, goodPolicy+identityClients)
	ca := testcerts.NewCA(t, "clients")
	tests := []struct {
		name string
		leaf testcerts.Leaf
		want string // "" none; "!" ambiguous
	}{
		{"URI SAN", testcerts.Leaf{URIs: []string{"spiffe://example.org/ns/billing/sa/billing"}}, "billing"},
		{"URI SAN among others", testcerts.Leaf{CN: "nobody", URIs: []string{"spiffe://example.org/other", "spiffe://example.org/ns/billing/sa/billing"}}, "billing"},
		{"DNS SAN in another case", testcerts.Leaf{DNS: []string{"reports.example.ORG"}}, "reports"},
		{"CN", testcerts.Leaf{CN: "operator"}, "operator"},
		{"CN in another case", testcerts.Leaf{CN: "Operator"}, ""},
		{"a DNS client's name as CN", testcerts.Leaf{CN: "reports.example.org"}, ""},
		{"a URI client's ID as DNS SAN", testcerts.Leaf{DNS: []string{"example.org"}}, ""},
		{"names of two clients", testcerts.Leaf{CN: "operator", URIs: []string{"spiffe://example.org/ns/billing/sa/billing"}}, "!"},
		{"one client twice", testcerts.Leaf{DNS: []string{"reports.example.org", "REPORTS.example.org"}}, "reports"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := p.ClientByCertificate(ca.Issue(t, tt.leaf).Cert)
			got := ""
			switch {
			case errors.Is(err, ErrAmbiguousCertificate):
				got = "!"
			case err != nil:
				t.Fatal(err)
			case c != nil:
				got = c.Name
			}
			if got != tt.want {
				t.Fatalf("ClientByCertificate = %q, want %q", got, tt.want)
			}
		})
	}
	if c := p.ClientByJWTSubject("system:serviceaccount:billing:billing"); c == nil || c.Name != "pod" {
		t.Errorf("ClientByJWTSubject = %v, want pod", c)
	}
	if c := p.ClientByJWTSubject("system:serviceaccount:billing:Billing"); c != nil {
		t.Errorf("a subject in another case names %s", c.Name)
	}
	if !p.UsesCertificates() || !p.UsesTokens() || !p.UsesJWT() || !p.AuthRequired() {
		t.Error("a policy of certificate and token clients does not say so")
	}
	if c, ok := p.Authenticate("test"); !ok || c.Name != "operator" {
		t.Errorf("operator's bearer token: %v %v", c, ok)
	}
	if d := p.Describe(); !strings.Contains(d, "client billing (certificate uri spiffe://example.org/ns/billing/sa/billing) may call: debit") ||
		!strings.Contains(d, "client operator (bearer token, certificate cn operator)") ||
		!strings.Contains(d, "client pod (JWT subject system:serviceaccount:billing:billing)") {
		t.Errorf("the description does not say how clients prove who they are:\n%s", d)
	}
}

// TestClientIdentityProblems: the compiler and the schema refuse the same
// client entries, each problem at its entry.
func TestClientIdentityProblems(t *testing.T) {
	for _, tt := range []struct{ name, client, entry, msg string }{
		{"no way to prove", "{operations: [debit]}", "clients.a", "say how the client proves who it is"},
		{"empty certificate", "{certificate: {}, operations: [debit]}", "clients.a.certificate", "want one of uri"},
		{"two names", "{certificate: {uri: 'spiffe://x/y', cn: y}, operations: [debit]}", "clients.a.certificate", "want one of uri"},
		{"relative URI", "{certificate: {uri: /ns/billing}, operations: [debit]}", "clients.a.certificate.uri", "want an absolute URI"},
		{"URI with a space", "{certificate: {uri: 'spiffe://x/a b'}, operations: [debit]}", "clients.a.certificate.uri", "want an absolute URI"},
		{"DNS name with a path", "{certificate: {dns: 'x.org/a'}, operations: [debit]}", "clients.a.certificate.dns", "want a DNS name"},
		{"long CN", "{certificate: {cn: " + strings.Repeat("x", 65) + "}, operations: [debit]}", "clients.a.certificate.cn", ""},
		{"JWT without subject", "{jwt: {}, operations: [debit]}", "clients.a.jwt.subject", "missing"},
		{"JWT with an empty subject", "{jwt: {subject: ''}, operations: [debit]}", "clients.a.jwt.subject", "missing"},
		{"JWT with a long subject", "{jwt: {subject: " + strings.Repeat("x", 1025) + "}, operations: [debit]}", "clients.a.jwt.subject", ""},
		{"unknown form", "{certificate: {email: a@x.org}, operations: [debit]}", "*", `unknown key "email"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := []byte(goodPolicy + "\nclients:\n  a: " + tt.client + "\n")
			_, parseErr := Parse("c.yaml", src)
			_, checkErr := Check("c.yaml", src)
			for _, err := range []error{parseErr, checkErr} {
				var pe *Error
				if !errors.As(err, &pe) || !hasProblem(pe, tt.entry, tt.msg) {
					t.Fatalf("%v: want %s: %s", err, tt.entry, tt.msg)
				}
			}
		})
	}
	dupJWT := goodPolicy + "\nclients:\n  a: {jwt: {subject: s}, operations: [debit]}\n  b: {jwt: {subject: s}, operations: [debit]}\n"
	if _, err := Parse("c.yaml", []byte(dupJWT)); err == nil || !strings.Contains(err.Error(), "same subject as client a") {
		t.Fatalf("two clients of one JWT subject: %v", err)
	}
	dup := goodPolicy + "\nclients:\n  a: {certificate: {dns: x.org}, operations: [debit]}\n  b: {certificate: {dns: X.org}, operations: [debit]}\n"
	if _, err := Parse("c.yaml", []byte(dup)); err == nil || !strings.Contains(err.Error(), "same certificate name as client a") {
		t.Fatalf("two clients of one DNS name: %v", err)
	}
}

// hasProblem reports whether pe has msg at entry ("*": at any entry; the
// loader names a line for a mistake of shape).
func hasProblem(pe *Error, entry, msg string) bool {
	for _, p := range pe.Problems {
		if (entry == "*" || p.Entry == entry) && strings.Contains(p.Message, msg) {
			return true
		}
	}
	return false
}

package gateway_test

import (
	"crypto/x509"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testcerts"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

const billingID = "spiffe://example.org/ns/billing/sa/billing"

// serverAuth is a server certificate's usage: one presented as a client's
// must be refused.
var serverAuth = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}

func certificatePolicy(t *testing.T) string {
	return demoPolicy(t, "monotonic") + `
clients:
  billing:
    certificate: {uri: "` + billingID + `"}
    operations: [debit, credit]
  other:
    certificate: {dns: other.example.org}
    operations: [debit, credit]
  opener:
    certificate: {cn: opener}
    token_sha256: ` + sha256Hex("opener-secret") + `
    operations: [open_account]
`
}

// TestClientCertificates: a client known by its certificate (URI SAN, DNS
// SAN or CN) needs no bearer token, and its name binds its tokens and
// picks its operations as a bearer token's does. A certificate that fails
// a check is a 401 that names the check, on every route, and writes
// nothing; without a certificate the handshake fails.
func TestClientCertificates(t *testing.T) {
	h := newHarness(t, certificatePolicy(t))
	now := time.Now()
	clients, elsewhere := testcerts.NewCA(t, "clients"), testcerts.NewCA(t, "elsewhere")
	gw := serveTLS(t, h, clients.WriteCA(t, t.TempDir(), "clients.pem"), false)
	billing := gw.as(clients.Issue(t, testcerts.Leaf{URIs: []string{billingID}}))
	l := billing.mustAcquire("account/acct-71", 30, 0)
	defer billing.release(l)

	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	for _, tt := range []struct {
		name   string
		cert   *testcerts.Pair
		header http.Header
		status int
		detail string
	}{
		{"expired", clients.Issue(t, testcerts.Leaf{URIs: []string{billingID}, NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-time.Hour)}), nil, 401, "client certificate expired at"},
		{"not yet valid", clients.Issue(t, testcerts.Leaf{URIs: []string{billingID}, NotBefore: now.Add(time.Hour)}), nil, 401, "client certificate not yet valid"},
		{"another CA's", elsewhere.Issue(t, testcerts.Leaf{URIs: []string{billingID}}), nil, 401, "not issued by a trusted CA"},
		{"a server's certificate", clients.Issue(t, testcerts.Leaf{URIs: []string{billingID}, Usage: serverAuth}), nil, 401, "lacks clientAuth"},
		{"self-signed", testcerts.SelfSigned(t, testcerts.Leaf{URIs: []string{billingID}}), nil, 401, "self-signed"},
		{"naming no client", clients.Issue(t, testcerts.Leaf{CN: "nobody"}), nil, 401, "names no client of the policy"},
		{"naming two clients", clients.Issue(t, testcerts.Leaf{CN: "opener", URIs: []string{billingID}}), nil, 401, "names more than one client"},
		{"with another client's bearer token", clients.Issue(t, testcerts.Leaf{URIs: []string{billingID}}), bearer("opener-secret"), 401, "name different clients"},
		{"with an unknown bearer token", clients.Issue(t, testcerts.Leaf{URIs: []string{billingID}}), bearer("nobody-secret"), 401, "unknown bearer token"},
		{"a client not allowed the operation", clients.Issue(t, testcerts.Leaf{CN: "opener"}), nil, 403, "may not call debit"},
		{"another client's token", clients.Issue(t, testcerts.Leaf{DNS: []string{"OTHER.example.org"}}), nil, 403, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			as := gw.as(tt.cert)
			hdr := http.Header{"Fencing-Token": {l.Token}}
			for k, v := range tt.header {
				hdr[k] = v
			}
			before := as.state()
			r := as.do(http.MethodPost, "/v1/ops/debit", hdr, debit("acct-71", 1))
			if r.Status != tt.status || !strings.Contains(r.Problem.Detail, tt.detail) {
				t.Fatalf("%d %s, want %d saying %q", r.Status, r.Body, tt.status, tt.detail)
			}
			if after := as.state(); after != before {
				t.Fatalf("refused request changed state: %s -> %s", before, after)
			}
			if strings.Contains(string(r.Body), billingID) || strings.Contains(string(r.Body), "opener-secret") {
				t.Fatalf("the problem quotes a credential: %s", r.Body)
			}
			if tt.status == 401 && tt.header == nil && !strings.Contains(tt.detail, "client") {
				// Every route checks the certificate, health included;
				// only the API asks whose it is.
				if r := as.do(http.MethodGet, "/livez", nil, ""); r.Status != 401 {
					t.Fatalf("GET /livez: %d, want 401", r.Status)
				}
			}
		})
	}
	if r := billing.write("debit", l.Token, debit("acct-71", 10)); r.Status != http.StatusOK {
		t.Fatalf("debit as billing by its certificate: %d %s", r.Status, r.Body)
	}
	// The same client by its certificate and its bearer token.
	opener := gw.as(clients.Issue(t, testcerts.Leaf{CN: "opener"}))
	if r := opener.do(http.MethodPost, "/v1/ops/open_account", bearer("opener-secret"), `{"account": "acct-7001"}`); r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden {
		t.Fatalf("opener by certificate and bearer token: %d %s", r.Status, r.Body)
	}

	req, _ := http.NewRequest(http.MethodGet, gw.base+"/livez", nil)
	if resp, err := gw.as(nil).client.Do(req); err == nil || !strings.Contains(err.Error(), "certificate required") {
		if err == nil {
			resp.Body.Close()
		}
		t.Fatalf("a connection without a certificate: %v, want the handshake refused (certificate required)", err)
	}
	// A certificate is public: presenting billing's without its key (the
	// handshake signed with another) proves nothing.
	stolen := clients.Issue(t, testcerts.Leaf{URIs: []string{billingID}}).TLSCertificate(t)
	stolen.PrivateKey = clients.Issue(t, testcerts.Leaf{CN: "thief"}).TLSCertificate(t).PrivateKey
	if resp, err := gw.presenting(&stolen).client.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("billing's certificate without its key: %d, want the handshake refused", resp.StatusCode)
	}
}

// TestClientCertificatesOptional: with client certificates optional, a
// caller without one proves who it is by bearer token, and one that
// presents a certificate that fails a check is refused all the same.
func TestClientCertificatesOptional(t *testing.T) {
	h := newHarness(t, certificatePolicy(t))
	clients := testcerts.NewCA(t, "clients")
	gw := serveTLS(t, h, clients.WriteCA(t, t.TempDir(), "clients.pem"), true)
	bearer := http.Header{"Authorization": {"Bearer opener-secret"}}
	anonymous := gw.as(nil)
	if r := anonymous.do(http.MethodGet, "/v1/leases?resource=account/acct-1", bearer, ""); r.Status != http.StatusOK {
		t.Fatalf("no certificate, a bearer token: %d %s", r.Status, r.Body)
	}
	if r := anonymous.do(http.MethodGet, "/v1/leases?resource=account/acct-1", nil, ""); r.Status != 401 || !strings.Contains(r.Problem.Detail, "or a client certificate") {
		t.Fatalf("neither: %d %s, want 401 asking for one", r.Status, r.Body)
	}
	expired := gw.as(clients.Issue(t, testcerts.Leaf{CN: "opener", NotAfter: time.Now().Add(-time.Minute)}))
	if r := expired.do(http.MethodGet, "/v1/leases?resource=account/acct-1", bearer, ""); r.Status != 401 || !strings.Contains(r.Problem.Detail, "expired") {
		t.Fatalf("an expired certificate with a good bearer token: %d %s, want 401", r.Status, r.Body)
	}
}

// TestClientCARotation: the client CA file replaced on disk is in force on
// the next request, on connections already open too.
func TestClientCARotation(t *testing.T) {
	h := newHarness(t, certificatePolicy(t))
	dir := t.TempDir()
	oldCA, newCA := testcerts.NewCA(t, "old clients"), testcerts.NewCA(t, "new clients")
	caFile := oldCA.WriteCA(t, dir, "clients.pem")
	gw := serveTLS(t, h, caFile, false)
	billing := gw.as(oldCA.Issue(t, testcerts.Leaf{URIs: []string{billingID}}))
	const path = "/v1/leases?resource=account/acct-1"
	if r := billing.do(http.MethodGet, path, nil, ""); r.Status != http.StatusOK {
		t.Fatalf("the old CA's certificate: %d %s", r.Status, r.Body)
	}
	testcerts.Replace(t, caFile, newCA.PEM())
	if !testenv.WaitFor(30*time.Second, func() bool { return billing.do(http.MethodGet, path, nil, "").Status == http.StatusUnauthorized }) {
		t.Fatal("the old CA's certificate is still accepted after the CA file was replaced")
	}
	if r := gw.as(newCA.Issue(t, testcerts.Leaf{URIs: []string{billingID}})).do(http.MethodGet, path, nil, ""); r.Status != http.StatusOK {
		t.Fatalf("the new CA's certificate: %d %s", r.Status, r.Body)
	}
}

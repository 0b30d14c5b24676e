package tlsfiles_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testcerts"
	"github.com/fencegw/fencegw/tlsfiles"
)

func TestVerifyClient(t *testing.T) {
	ca, other := testcerts.NewCA(t, "clients"), testcerts.NewCA(t, "elsewhere")
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	now := time.Now()
	good := ca.Issue(t, testcerts.Leaf{CN: "billing"})
	tests := []struct {
		name  string
		certs []*x509.Certificate
		want  error
		text  string
	}{
		{"good", []*x509.Certificate{good.Cert}, nil, ""},
		{"none", nil, tlsfiles.ErrNoCertificate, "no client certificate"},
		{"expired", leaf(ca.Issue(t, testcerts.Leaf{CN: "b", NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-time.Hour)})),
			tlsfiles.ErrExpired, "expired at"},
		{"not yet valid", leaf(ca.Issue(t, testcerts.Leaf{CN: "b", NotBefore: now.Add(time.Hour)})), tlsfiles.ErrNotYetValid, "valid from"},
		{"wrong CA", leaf(other.Issue(t, testcerts.Leaf{CN: "billing"})), tlsfiles.ErrUnknownCA, "not issued by a trusted CA"},
		{"self-signed", leaf(testcerts.SelfSigned(t, testcerts.Leaf{CN: "billing"})), tlsfiles.ErrSelfSigned, "self-signed"},
		{"a server's certificate", leaf(ca.Issue(t, testcerts.Leaf{CN: "billing", Usage: serverAuth})), tlsfiles.ErrUsage, "clientAuth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tlsfiles.VerifyClient(&tls.ConnectionState{PeerCertificates: tt.certs}, roots, now)
			if tt.want == nil {
				if err != nil || got != tt.certs[0] {
					t.Fatalf("VerifyClient = %v, %v; want the leaf", got, err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) || got != nil {
				t.Fatalf("VerifyClient = %v, %v; want %v saying %q", got, err, tt.want, tt.text)
			}
			if strings.Contains(err.Error(), "billing") {
				t.Fatalf("the error %q quotes the certificate's names", err)
			}
		})
	}
	// No CA bundle verifies nothing: the system's roots are not a client
	// CA.
	if _, err := tlsfiles.VerifyClient(&tls.ConnectionState{PeerCertificates: []*x509.Certificate{good.Cert}}, x509.NewCertPool(), now); !errors.Is(err, tlsfiles.ErrUnknownCA) {
		t.Fatalf("with an empty pool: %v, want ErrUnknownCA", err)
	}
}

// serverAuth is a server certificate's usage.
var serverAuth = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}

func leaf(p *testcerts.Pair) []*x509.Certificate { return []*x509.Certificate{p.Cert} }

package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Leaf says what a certificate of Issue or SelfSigned names, when it is
// valid and what for: the names a client is known by (URI SANs such as
// SPIFFE IDs, DNS SANs, a CN), and the variants a verifier must refuse.
type Leaf struct {
	CN   string
	DNS  []string
	URIs []string
	IPs  []net.IP
	// Zero times: from an hour ago for a day.
	NotBefore, NotAfter time.Time
	// Usage is the extended key usage; nil: client authentication.
	Usage []x509.ExtKeyUsage
}

// Issue makes the certificate l describes, signed by the CA.
func (ca *CA) Issue(t testing.TB, l Leaf) *Pair {
	t.Helper()
	p, err := ca.issue(l.template(t))
	return must(t, p, err)
}

// SelfSigned makes the certificate l describes, signed by its own key.
func SelfSigned(t testing.TB, l Leaf) *Pair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := l.template(t)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	cert, der, err := sign(tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &Pair{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", keyDER)}
}

func (l Leaf) template(t testing.TB) *x509.Certificate {
	t.Helper()
	tmpl := template(l.CN)
	tmpl.DNSNames, tmpl.IPAddresses, tmpl.ExtKeyUsage = l.DNS, l.IPs, l.Usage
	if l.Usage == nil {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	if !l.NotBefore.IsZero() {
		tmpl.NotBefore = l.NotBefore
	}
	if !l.NotAfter.IsZero() {
		tmpl.NotAfter = l.NotAfter
	}
	for _, u := range l.URIs {
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, parsed)
	}
	return tmpl
}

// TLSCertificate is the pair for a tls.Config.
func (p *Pair) TLSCertificate(t testing.TB) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	return must(t, c, err)
}

// Rotate writes the pair over the files Write wrote, each by a rename
// (the key first), as a secret mount or cert-manager replaces them: a
// reader sees each file whole, old or new.
func (p *Pair) Rotate(t testing.TB, dir, name string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	Replace(t, keyFile, p.KeyPEM)
	Replace(t, certFile, p.CertPEM)
	return certFile, keyFile
}

// Replace writes data to a new file beside path and renames it over path.
func Replace(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority that signs the certificates of a test.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// Pair is a signed certificate and its private key.
type Pair struct {
	Cert            *x509.Certificate
	CertPEM, KeyPEM []byte
}

// NewCA makes a CA named name, valid from an hour ago for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	ca, err := newCA(name)
	return must(t, ca, err)
}

// PEM is the CA's certificate, for a trust store.
func (ca *CA) PEM() []byte { return ca.pem }

// Server makes a server certificate for hosts: each an IP address or a
// DNS name. The first is also its common name.
func (ca *CA) Server(t testing.TB, hosts ...string) *Pair {
	t.Helper()
	p, err := ca.server(hosts...)
	return must(t, p, err)
}

// Client makes a client certificate with common name cn.
func (ca *CA) Client(t testing.TB, cn string) *Pair {
	t.Helper()
	p, err := ca.client(cn)
	return must(t, p, err)
}

// WriteCA writes the CA's certificate to dir/name and returns its path.
func (ca *CA) WriteCA(t testing.TB, dir, name string) string {
	t.Helper()
	path, err := write(filepath.Join(dir, name), ca.pem)
	return must(t, path, err)
}

// Write writes the pair to dir/name.crt and dir/name.key, the key
// readable by its owner only (PostgreSQL refuses it otherwise), and
// returns their paths.
func (p *Pair) Write(t testing.TB, dir, name string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile, err := p.write(dir, name)
	return must(t, certFile, err), keyFile
}

// Files are a CA, a server certificate and a client certificate it
// signed, as files: what a harness outside a test (fencegw torture) needs
// for TLS with client certificates.
type Files struct {
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// WriteFiles makes Files in dir: a server certificate for hosts (IP
// addresses or DNS names) and a client certificate with common name
// clientCN, keys readable by their owner only.
func WriteFiles(dir string, hosts []string, clientCN string) (Files, error) {
	var f Files
	ca, err := newCA("fencegw CA")
	if err != nil {
		return f, fmt.Errorf("testcerts: %w", err)
	}
	server, err := ca.server(hosts...)
	if err != nil {
		return f, fmt.Errorf("testcerts: %w", err)
	}
	client, err := ca.client(clientCN)
	if err != nil {
		return f, fmt.Errorf("testcerts: %w", err)
	}
	if f.CA, err = write(filepath.Join(dir, "ca.crt"), ca.pem); err != nil {
		return f, fmt.Errorf("testcerts: %w", err)
	}
	if f.ServerCert, f.ServerKey, err = server.write(dir, "server"); err != nil {
		return f, fmt.Errorf("testcerts: %w", err)
	}
	if f.ClientCert, f.ClientKey, err = client.write(dir, "client"); err != nil {
		return f, fmt.Errorf("testcerts: %w", err)
	}
	return f, nil
}

func must[T any](t testing.TB, v T, err error) T {
	t.Helper()
	if err != nil {
		t.Fatalf("testcerts: %v", err)
	}
	return v
}

func newCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := template(name)
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	cert, der, err := sign(tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key, pem: pemBlock("CERTIFICATE", der)}, nil
}

func (ca *CA) server(hosts ...string) (*Pair, error) {
	tmpl := template(hosts[0])
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	return ca.issue(tmpl)
}

func (ca *CA) client(cn string) (*Pair, error) {
	tmpl := template(cn)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.issue(tmpl)
}

func (ca *CA) issue(tmpl *x509.Certificate) (*Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	cert, der, err := sign(tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Pair{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", keyDER)}, nil
}

func (p *Pair) write(dir, name string) (certFile, keyFile string, err error) {
	if certFile, err = write(filepath.Join(dir, name+".crt"), p.CertPEM); err != nil {
		return "", "", err
	}
	keyFile, err = write(filepath.Join(dir, name+".key"), p.KeyPEM)
	return certFile, keyFile, err
}

func write(path string, data []byte) (string, error) {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// template is a certificate for cn with a random serial: a verifier may
// refuse two certificates of one issuer with the same serial.
func template(cn string) *x509.Certificate {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"fencegw tests"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
	}
}

func sign(tmpl, parent *x509.Certificate, pub, signer any) (*x509.Certificate, []byte, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, der, err
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

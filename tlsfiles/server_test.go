package tlsfiles_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testcerts"
	"github.com/fencegw/fencegw/tlsfiles"
)

// serveTLS accepts connections on a TLS listener with cfg and completes
// their handshakes until the test ends; it returns the address.
func serveTLS(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	})
	return ln.Addr().String()
}

// servedSerial is the serial of the certificate a new connection to addr
// gets.
func servedSerial(t *testing.T, addr string, roots *x509.CertPool) *big.Int {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

func TestServerReloadsItsCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "gateway CA")
	first := ca.Server(t, "localhost", "127.0.0.1")
	certFile, keyFile := first.Write(t, dir, "gw")
	var mu sync.Mutex
	var reported []string
	srv, err := tlsfiles.NewServer(tlsfiles.ServerFiles{CertFile: certFile, KeyFile: keyFile}, tlsfiles.Options{
		Interval: 10 * time.Millisecond,
		OnReloadError: func(what string, err error) {
			mu.Lock()
			defer mu.Unlock()
			reported = append(reported, what+": "+err.Error())
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, srv.Config())
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if got := servedSerial(t, addr, roots); got.Cmp(first.Cert.SerialNumber) != 0 {
		t.Fatalf("served serial %s, want the first certificate's %s", got, first.Cert.SerialNumber)
	}

	// A key that does not match the certificate: the old pair stays, and
	// the fault is reported.
	testcerts.Replace(t, keyFile, ca.Server(t, "localhost", "127.0.0.1").KeyPEM)
	if !waitFor(10*time.Second, func() bool {
		servedSerial(t, addr, roots) // a handshake reads the files
		mu.Lock()
		defer mu.Unlock()
		return len(reported) > 0
	}) {
		t.Fatal("a mismatched key was not reported")
	}
	if got := servedSerial(t, addr, roots); got.Cmp(first.Cert.SerialNumber) != 0 {
		t.Fatalf("after a mismatched key the server serves %s, want the old certificate %s", got, first.Cert.SerialNumber)
	}
	mu.Lock()
	if !strings.HasPrefix(reported[0], "certificate: ") || !strings.Contains(reported[0], "does not match") || !strings.Contains(reported[0], "still using") {
		t.Errorf("report %q: want the certificate named, the mismatch, and that the old files stay", reported[0])
	}
	mu.Unlock()

	// A new pair, renamed over the old: new connections get it.
	second := ca.Server(t, "localhost", "127.0.0.1")
	second.Rotate(t, dir, "gw")
	if !waitFor(10*time.Second, func() bool { return servedSerial(t, addr, roots).Cmp(second.Cert.SerialNumber) == 0 }) {
		t.Fatalf("the server still serves %s after the files were replaced", servedSerial(t, addr, roots))
	}
}

func TestServerSpeaksTLS12AndNewerOnly(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "gateway CA")
	certFile, keyFile := ca.Server(t, "localhost", "127.0.0.1").Write(t, dir, "gw")
	srv, err := tlsfiles.NewServer(tlsfiles.ServerFiles{CertFile: certFile, KeyFile: keyFile}, tlsfiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, srv.Config())
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: v, MaxVersion: v})
		if err != nil {
			t.Fatalf("%s: %v", tls.VersionName(v), err)
		}
		c.Close()
	}
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11})
	if err == nil {
		c.Close()
		t.Fatal("a TLS 1.1 handshake succeeded")
	}
}

func TestNewServerRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "gateway CA")
	pair := ca.Server(t, "localhost", "127.0.0.1")
	certFile, keyFile := pair.Write(t, dir, "gw")
	_, otherKey := ca.Server(t, "localhost", "127.0.0.1").Write(t, dir, "other")
	caFile := ca.WriteCA(t, dir, "ca.pem")
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	empty, garbage := write("empty.pem", ""), write("garbage.pem", "not PEM at all")
	keyAsCA := write("key-as-ca.pem", string(pair.KeyPEM))
	tests := []struct {
		name  string
		files tlsfiles.ServerFiles
		want  error
		text  string
	}{
		{"no key", tlsfiles.ServerFiles{CertFile: certFile}, tlsfiles.ErrBadOptions, "both"},
		{"missing certificate", tlsfiles.ServerFiles{CertFile: filepath.Join(dir, "none.crt"), KeyFile: keyFile}, os.ErrNotExist, "none.crt"},
		{"missing key", tlsfiles.ServerFiles{CertFile: certFile, KeyFile: filepath.Join(dir, "none.key")}, os.ErrNotExist, "none.key"},
		{"mismatched key", tlsfiles.ServerFiles{CertFile: certFile, KeyFile: otherKey}, tlsfiles.ErrBadFile, "does not match"},
		{"empty certificate", tlsfiles.ServerFiles{CertFile: empty, KeyFile: keyFile}, nil, "empty"},
		{"missing client CA", tlsfiles.ServerFiles{CertFile: certFile, KeyFile: keyFile, ClientCAFile: filepath.Join(dir, "none.pem")}, os.ErrNotExist, "none.pem"},
		{"empty client CA", tlsfiles.ServerFiles{CertFile: certFile, KeyFile: keyFile, ClientCAFile: empty}, nil, "empty"},
		{"client CA not PEM", tlsfiles.ServerFiles{CertFile: certFile, KeyFile: keyFile, ClientCAFile: garbage}, tlsfiles.ErrBadFile, "no PEM certificate"},
		{"a key as client CA", tlsfiles.ServerFiles{CertFile: certFile, KeyFile: keyFile, ClientCAFile: keyAsCA}, tlsfiles.ErrBadFile, `is "PRIVATE KEY", want CERTIFICATE`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tlsfiles.NewServer(tt.files, tlsfiles.Options{})
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("NewServer = %v, want %v saying %q", err, tt.want, tt.text)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY-----") {
				t.Fatalf("the error %q quotes a key", err)
			}
		})
	}
	if _, err := tlsfiles.NewServer(tlsfiles.ServerFiles{CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile}, tlsfiles.Options{}); err != nil {
		t.Fatalf("good files: %v", err)
	}
}

// waitFor polls cond until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

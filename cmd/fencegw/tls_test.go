package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testcerts"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// runServe serves cfg until the test ends and returns the API's address.
func runServe(t *testing.T, cfg serveConfig) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrs, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- serve(ctx, cfg, func(addr string) { addrs <- addr }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case addr := <-addrs:
		return addr
	case err := <-done:
		t.Fatalf("serve stopped: %v", err)
	}
	return ""
}

// httpsClient trusts ca and presents certs, if any.
func httpsClient(ca *testcerts.CA, certs ...tls.Certificate) *http.Client {
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return &http.Client{
		Timeout:   30 * time.Second, // a hang fails the test instead of stalling it
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}},
	}
}

// TestServeTLS: with --tls-cert-file and --tls-key-file the API is HTTPS,
// TLS 1.2 or newer; plain HTTP to it gets a 400 that says so, at once;
// --ops-listen serves /livez, /readyz and /metrics, and only those, in
// plain HTTP, and a TLS client there is refused at once, not left hanging;
// the API listener then serves /metrics no more (issue 34: anyone who
// reached the API read it without credentials).
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "gateway CA")
	pair := ca.Server(t, "localhost", "127.0.0.1")
	cfg := serveConfigFor(t, migrated(t), "../../testdata/demo/policy.yaml")
	cfg.TLS.CertFile, cfg.TLS.KeyFile = pair.Write(t, dir, "gw")
	cfg.TLS.OpsListen = "127.0.0.1:0"
	opsAddr := make(chan string, 1)
	cfg.TLS.opsBound = func(addr string) { opsAddr <- addr }
	addr := runServe(t, cfg)
	ops := <-opsAddr

	hc := httpsClient(ca)
	resp, err := hc.Get("https://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Fatalf("GET https://.../readyz = %d over %v, want 200 over TLS 1.2+", resp.StatusCode, resp.TLS)
	}
	old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: hc.Transport.(*http.Transport).TLSClientConfig.RootCAs, MaxVersion: tls.VersionTLS11}}, Timeout: 30 * time.Second}
	if resp, err := old.Get("https://" + addr + "/livez"); err == nil {
		resp.Body.Close()
		t.Fatal("a TLS 1.1 client was served")
	}

	plain := &http.Client{Timeout: 30 * time.Second}
	resp, err = plain.Get("http://" + addr + "/livez")
	if err != nil {
		t.Fatalf("plain HTTP to the TLS listener: %v, want a 400", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "HTTP request to an HTTPS server") {
		t.Fatalf("plain HTTP to the TLS listener: %d %q, want 400 saying to use HTTPS", resp.StatusCode, body)
	}

	for _, path := range []string{"/livez", "/readyz", "/metrics"} {
		if code := getStatus(t, "http://"+ops+path); code != http.StatusOK {
			t.Errorf("GET %s on the ops listener = %d, want 200", path, code)
		}
	}
	for _, path := range []string{"/v1/leases?resource=account/acct-1", "/status"} {
		if code := getStatus(t, "http://"+ops+path); code != http.StatusNotFound {
			t.Errorf("GET %s on the ops listener = %d, want 404: it serves probes and metrics only", path, code)
		}
	}
	resp, err = hc.Get("https://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "ops listener") || strings.Contains(string(body), "fencegw_") {
		t.Errorf("GET /metrics on the API listener with --ops-listen = %d %.200s, want 404 naming the ops listener", resp.StatusCode, body)
	}
	_, err = hc.Get("https://" + ops + "/livez")
	if err == nil || !strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		t.Fatalf("a TLS ClientHello to the plain ops listener: %v, want an HTTP answer the client names", err)
	}
}

// TestServeReloadsItsCertificate: a certificate and key replaced on disk
// are served to new connections without a restart; a key that does not
// match its certificate keeps the pair before, and is logged and counted.
func TestServeReloadsItsCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "gateway CA")
	first := ca.Server(t, "localhost", "127.0.0.1")
	cfg := serveConfigFor(t, migrated(t), "../../testdata/demo/policy.yaml")
	cfg.TLS.CertFile, cfg.TLS.KeyFile = first.Write(t, dir, "gw")
	var log testenv.Buffer
	cfg.logOut = &log
	addr := runServe(t, cfg)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	serial := func() *big.Int {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "localhost"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber
	}
	if got := serial(); got.Cmp(first.Cert.SerialNumber) != 0 {
		t.Fatalf("serves %s, want %s", got, first.Cert.SerialNumber)
	}
	testcerts.Replace(t, cfg.TLS.KeyFile, ca.Server(t, "localhost", "127.0.0.1").KeyPEM)
	counted := `fencegw_credential_reload_failures_total{file="tls-certificate"} 1`
	if !testenv.WaitFor(30*time.Second, func() bool {
		serial() // a handshake reads the files again
		return strings.Contains(scrape(t, httpsClient(ca), "https://"+addr+"/metrics"), counted)
	}) {
		t.Fatalf("a mismatched key was not counted (%s); log:\n%s", counted, log.String())
	}
	if got := serial(); got.Cmp(first.Cert.SerialNumber) != 0 {
		t.Fatalf("after a mismatched key it serves %s, want the pair before, %s", got, first.Cert.SerialNumber)
	}
	if !strings.Contains(log.String(), "a changed credential file did not load") || strings.Contains(log.String(), "PRIVATE KEY") {
		t.Fatalf("the log does not report the failed reload, or quotes a key:\n%s", log.String())
	}
	second := ca.Server(t, "localhost", "127.0.0.1")
	second.Rotate(t, dir, "gw")
	if !testenv.WaitFor(30*time.Second, func() bool { return serial().Cmp(second.Cert.SerialNumber) == 0 }) {
		t.Fatalf("still serving %s after the files were replaced", serial())
	}
}

func scrape(t *testing.T, hc *http.Client, url string) string {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestServeRefusesBadTLSFiles: a certificate or key that is missing or
// does not match, or a client CA file that is not PEM, stops the start
// before anything is listened on or connected to.
func TestServeRefusesBadTLSFiles(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "gateway CA")
	certFile, keyFile := ca.Server(t, "localhost", "127.0.0.1").Write(t, dir, "gw")
	_, otherKey := ca.Server(t, "localhost", "127.0.0.1").Write(t, dir, "other")
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name                string
		cert, key, clientCA string
		want                string
	}{
		{"missing certificate", filepath.Join(dir, "none.crt"), keyFile, "", "none.crt"},
		{"missing key", certFile, filepath.Join(dir, "none.key"), "", "none.key"},
		{"mismatched key", certFile, otherKey, "", "does not match"},
		{"client CA not PEM", certFile, keyFile, notPEM, "no PEM certificate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Nothing listens on port 1: were the database asked, the
			// error would say so.
			cfg := serveConfigFor(t, "postgres://u@127.0.0.1:1/db", "../../testdata/demo/policy.yaml")
			cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.ClientCAFile = tt.cert, tt.key, tt.clientCA
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := serve(ctx, cfg, func(string) { t.Error("serve started") })
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "--tls-") || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("serve = %v, want a refusal naming the flags and %q", err, tt.want)
			}
		})
	}
}

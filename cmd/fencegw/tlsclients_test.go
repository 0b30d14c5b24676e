package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testcerts"
)

// certificatePolicy writes the demo policy with one client, billing,
// known by the URI SAN of its certificate.
func certificatePolicy(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "policy.yaml")
	src = append(src, "\nclients:\n  billing:\n    certificate: {uri: \"spiffe://example.org/billing\"}\n    operations: [debit]\n"...)
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServeClientCertificates: with --tls-client-ca-file a client is
// known by its certificate; one that fails a check gets a 401 naming the
// check, and a connection without one is refused in the handshake. A
// policy of certificate clients without the flag does not start.
func TestServeClientCertificates(t *testing.T) {
	dir := t.TempDir()
	serverCA, clientCA := testcerts.NewCA(t, "gateway CA"), testcerts.NewCA(t, "clients")
	pol := certificatePolicy(t)
	cfg := serveConfigFor(t, "postgres://u@127.0.0.1:1/db", pol)
	cfg.TLS.CertFile, cfg.TLS.KeyFile = serverCA.Server(t, "localhost", "127.0.0.1").Write(t, dir, "gw")
	err := serve(context.Background(), cfg, func(string) { t.Error("serve started") })
	if err == nil || !strings.Contains(err.Error(), "--tls-client-ca-file") {
		t.Fatalf("certificate clients without --tls-client-ca-file: %v, want a refusal naming it", err)
	}

	cfg.DatabaseURL = migrated(t)
	cfg.TLS.ClientCAFile = clientCA.WriteCA(t, dir, "clients.pem")
	addr := runServe(t, cfg)
	url := "https://" + addr + "/v1/leases?resource=account/acct-1"
	billing := clientCA.Issue(t, testcerts.Leaf{URIs: []string{"spiffe://example.org/billing"}})
	if body := scrape(t, httpsClient(serverCA, billing.TLSCertificate(t)), url); !strings.Contains(body, `"resource":"account/acct-1"`) {
		t.Fatalf("billing by its certificate: %s", body)
	}
	expired := clientCA.Issue(t, testcerts.Leaf{URIs: []string{"spiffe://example.org/billing"}, NotAfter: time.Now().Add(-time.Minute)})
	if body := scrape(t, httpsClient(serverCA, expired.TLSCertificate(t)), url); !strings.Contains(body, "client certificate expired at") || !strings.Contains(body, `"status":401`) {
		t.Fatalf("an expired certificate: %s, want 401 saying it expired", body)
	}
	if _, err := httpsClient(serverCA).Get(url); err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Fatalf("no certificate: %v, want the handshake refused", err)
	}
}

// TestDevSheetsSayHTTPS: with TLS flags, what dev prints to try names
// the https:// gateway.
func TestDevSheetsSayHTTPS(t *testing.T) {
	cfg := serveConfig{TLS: tlsFlags{CertFile: "gw.crt", KeyFile: "gw.key"}, PolicyPath: "../../testdata/demo/policy.yaml"}
	for name, sheet := range map[string]string{
		"cheat sheet":  cheatSheet("127.0.0.1:8443", cfg, "", ""),
		"policy sheet": policySheet("127.0.0.1:8443", cfg, "", ""),
	} {
		if !strings.Contains(sheet, "https://127.0.0.1:8443") || strings.Contains(sheet, "http://127.0.0.1") {
			t.Errorf("%s does not name the https:// gateway:\n%s", name, sheet)
		}
	}
}

package client_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testcerts"
	"github.com/fencegw/fencegw/internal/harness/testgw"
	"github.com/fencegw/fencegw/internal/harness/testjwt"
	"github.com/fencegw/fencegw/jwtauth"
	"github.com/fencegw/fencegw/tlsfiles"
)

const (
	podSubject = "system:serviceaccount:billing:billing"
	spiffeID   = "spiffe://example.org/billing"
)

// tlsGateway serves the demo over HTTPS, asking for client certificates
// (optional) of clientCA, and verifying JWTs of keys. Its clients: billing
// by certificate, pod by JWT. It returns the gateway and the files of the
// CA its certificate chains to.
type tlsSetup struct {
	gw      *testgw.Gateway
	dir     string
	caFile  string // the gateway's certificate's CA
	clients *testcerts.CA
	key     *testjwt.Key
}

func startTLSGateway(t *testing.T) *tlsSetup {
	t.Helper()
	s := &tlsSetup{dir: t.TempDir(), clients: testcerts.NewCA(t, "clients"), key: testjwt.EC(t, "k")}
	serverCA := testcerts.NewCA(t, "gateway CA")
	s.caFile = serverCA.WriteCA(t, s.dir, "gateway-ca.pem")
	certFile, keyFile := serverCA.Server(t, "localhost", "127.0.0.1").Write(t, s.dir, "gw")
	srv, err := tlsfiles.NewServer(tlsfiles.ServerFiles{CertFile: certFile, KeyFile: keyFile,
		ClientCAFile: s.clients.WriteCA(t, s.dir, "clients.pem"), ClientCertOptional: true}, tlsfiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	jwks := filepath.Join(s.dir, "jwks.json")
	testjwt.WriteJWKS(t, jwks, s.key)
	v, err := jwtauth.New(jwtauth.Config{JWKSFile: jwks, Issuer: "iss", Audience: "fencegw"})
	if err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(s.dir, "policy.yaml")
	writeFile(t, pol, demoPolicy(t)+`
clients:
  billing:
    certificate: {uri: "`+spiffeID+`"}
    operations: [debit, credit]
  pod:
    jwt: {subject: "`+podSubject+`"}
    operations: [debit, credit]
`)
	s.gw = testgw.Start(t, testgw.Options{
		Policy: pol, Migrations: "../testdata/demo/migrations", MigrationsTable: "demo_schema_migrations", TLS: srv.Config(),
		Config: func(c *gateway.Config) { c.ClientCAs, c.VerifyJWT = srv.ClientCAs, v.Verify },
	})
	return s
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	testcerts.Replace(t, path, []byte(data))
}

// TestClientTLS: with WithTLSFiles the client speaks to an https://
// gateway, trusting its CA, and proves who it is by its certificate.
func TestClientTLS(t *testing.T) {
	s := startTLSGateway(t)
	certFile, keyFile := s.clients.Issue(t, testcerts.Leaf{URIs: []string{spiffeID}}).Write(t, s.dir, "billing")
	if !strings.HasPrefix(s.gw.URL, "https://") {
		t.Fatalf("the gateway serves %s", s.gw.URL)
	}
	c := client.New(s.gw.URL, client.WithTLSFiles(client.TLSFiles{CAFile: s.caFile, CertFile: certFile, KeyFile: keyFile}))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "account/acct-1", client.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if _, err := l.Write(ctx, "debit", map[string]any{"account": "acct-1", "amount_cents": 1}); err != nil {
		t.Fatalf("a write as billing by its certificate: %v", err)
	}
	// Without the gateway's CA, its certificate is not trusted.
	if _, err := client.New(s.gw.URL).Observe(ctx, "account/acct-1"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA: %v, want the gateway's certificate refused", err)
	}
}

// TestClientBearerFile: the bearer file is read again before each request,
// so a rotated JWT is used from the next acquisition on.
func TestClientBearerFile(t *testing.T) {
	s := startTLSGateway(t)
	expired := testjwt.Claims("iss", "fencegw", podSubject)
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	path := filepath.Join(s.dir, "token")
	writeFile(t, path, s.key.Sign(t, expired)+"\n")
	c := client.New(s.gw.URL, client.WithTLSFiles(client.TLSFiles{CAFile: s.caFile}), client.WithBearerFile(path))
	ctx := context.Background()
	opts := client.AcquireOptions{TTL: 10 * time.Second}
	if _, err := c.Acquire(ctx, "account/acct-2", opts); !errors.Is(err, client.ErrUnauthorized) || !strings.Contains(err.Error(), "JWT expired") {
		t.Fatalf("with an expired JWT in the file: %v, want unauthorized, JWT expired", err)
	}
	writeFile(t, path, s.key.Sign(t, testjwt.Claims("iss", "fencegw", podSubject)))
	l, err := c.Acquire(ctx, "account/acct-2", opts)
	if err != nil {
		t.Fatalf("after the JWT in the file was replaced: %v", err)
	}
	defer l.Release(ctx)
	if _, err := l.Write(ctx, "debit", map[string]any{"account": "acct-2", "amount_cents": 1}); err != nil {
		t.Fatal(err)
	}
}

// TestClientCredentialOptionsRefused: credential files that do not load
// are the error of the first call, before anything is sent.
func TestClientCredentialOptionsRefused(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "ca")
	certFile, _ := ca.Issue(t, testcerts.Leaf{CN: "x"}).Write(t, dir, "c")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		opt  client.Option
		want string
	}{
		{"a missing CA file", client.WithTLSFiles(client.TLSFiles{CAFile: filepath.Join(dir, "none.pem")}), "none.pem"},
		{"a certificate without its key", client.WithTLSFiles(client.TLSFiles{CertFile: certFile}), "needs its key"},
		{"a missing bearer file", client.WithBearerFile(filepath.Join(dir, "none")), "bearer file"},
		{"an empty bearer file", client.WithBearerFile(empty), "empty"},
	} {
		// Nothing listens on port 1: an error there would be a refused
		// connection.
		_, err := client.New("https://127.0.0.1:1", tt.opt).Observe(context.Background(), "account/acct-1")
		if !errors.Is(err, client.ErrBadOptions) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrBadOptions saying %q", tt.name, err, tt.want)
		}
	}
}

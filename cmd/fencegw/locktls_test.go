package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testcerts"
	"github.com/fencegw/fencegw/internal/harness/testjwt"
)

// TestLockOverTLS: lock speaks to an https:// gateway with --tls-ca-file,
// proves who it is by --tls-cert-file and --tls-key-file or by the JWT in
// --bearer-file, and hands the files' names to its command; credentials
// that are refused, or flags that do not go together, run nothing.
func TestLockOverTLS(t *testing.T) {
	dir := t.TempDir()
	serverCA, clientCA := testcerts.NewCA(t, "gateway CA"), testcerts.NewCA(t, "clients")
	const iss, aud, sub = "https://kubernetes.default.svc", "fencegw", "system:serviceaccount:billing:billing"
	demo, err := os.ReadFile("../../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(dir, "policy.yaml")
	writeFile(t, pol, string(demo)+`
clients:
  billing:
    certificate: {uri: "spiffe://example.org/billing"}
    operations: ["*"]
  pod:
    jwt: {subject: "`+sub+`"}
    operations: ["*"]
`)
	key := testjwt.EC(t, "k")
	jwks := filepath.Join(dir, "jwks.json")
	testjwt.WriteJWKS(t, jwks, key)
	cfg := serveConfigFor(t, migrated(t), pol)
	cfg.TLS.CertFile, cfg.TLS.KeyFile = serverCA.Server(t, "localhost", "127.0.0.1").Write(t, dir, "gw")
	cfg.TLS.ClientCAFile, cfg.TLS.ClientAuth = clientCA.WriteCA(t, dir, "clients.pem"), "optional"
	cfg.JWT.JWKSFile, cfg.JWT.Issuer, cfg.JWT.Audience = jwks, iss, aud
	base := "https://" + runServe(t, cfg)
	caFile := serverCA.WriteCA(t, dir, "gateway-ca.pem")
	certFile, keyFile := clientCA.Issue(t, testcerts.Leaf{URIs: []string{"spiffe://example.org/billing"}}).Write(t, dir, "billing")
	tokenFile := filepath.Join(dir, "token")
	writeFile(t, tokenFile, key.Sign(t, testjwt.Claims(iss, aud, sub)))
	expired := testjwt.Claims(iss, aud, sub)
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	expiredFile := filepath.Join(dir, "expired")
	writeFile(t, expiredFile, key.Sign(t, expired))
	t.Setenv("FENCEGW_BEARER_TOKEN", "")

	ctx := context.Background()
	lock := func(args ...string) error {
		return execute(ctx, io.Discard, append(append([]string{"lock", "--gateway", base}, args...), "account/acct-21", "--", "sh", "-c",
			`[ -n "$FENCING_TOKEN" ] && [ "$FENCEGW_URL" = "`+base+`" ] && [ "$FENCEGW_TLS_CA_FILE" = "`+caFile+`" ] && exit 9; exit 1`)...)
	}
	var exit *exitError
	if err := lock("--tls-ca-file", caFile, "--tls-cert-file", certFile, "--tls-key-file", keyFile); !errors.As(err, &exit) || exit.code != 9 {
		t.Fatalf("lock by a client certificate = %v, want the command's status 9", err)
	}
	if err := lock("--tls-ca-file", caFile, "--bearer-file", tokenFile); !errors.As(err, &exit) || exit.code != 9 {
		t.Fatalf("lock by the JWT of --bearer-file = %v, want the command's status 9", err)
	}
	t.Setenv("FENCEGW_TLS_CA_FILE", caFile)
	t.Setenv("FENCEGW_BEARER_FILE", tokenFile)
	if err := execute(ctx, io.Discard, "lock", "--gateway", base, "account/acct-21", "--", "true"); err != nil {
		t.Fatalf("lock with its files from the environment = %v", err)
	}
	t.Setenv("FENCEGW_TLS_CA_FILE", "")
	t.Setenv("FENCEGW_BEARER_FILE", "")

	for _, tt := range []struct {
		name string
		args []string
		code int // 0: a usage error
		want string
	}{
		{"without the gateway's CA", []string{"--bearer-file", tokenFile}, exitUnavailable, "certificate"},
		{"an expired JWT", []string{"--tls-ca-file", caFile, "--bearer-file", expiredFile}, exitUnavailable, "--bearer-file was refused"},
		{"no credential", []string{"--tls-ca-file", caFile}, exitUnavailable, "set FENCEGW_BEARER_TOKEN"},
		{"a certificate without its key", []string{"--tls-ca-file", caFile, "--tls-cert-file", certFile}, 0, "go together"},
		{"a missing bearer file", []string{"--tls-ca-file", caFile, "--bearer-file", filepath.Join(dir, "none")}, 0, "bearer file"},
	} {
		marker := filepath.Join(t.TempDir(), "ran")
		err := execute(ctx, io.Discard, append(append([]string{"lock", "--gateway", base}, tt.args...), "account/acct-22", "--", "touch", marker)...)
		switch {
		case tt.code == 0 && !errors.Is(err, errUsage), tt.code != 0 && (!errors.As(err, &exit) || exit.code != tt.code), !strings.Contains(fmtErr(err), tt.want):
			t.Errorf("%s: lock = %v, want status %d saying %q", tt.name, err, tt.code, tt.want)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%s: the command ran", tt.name)
		}
	}
	t.Setenv("FENCEGW_BEARER_TOKEN", "x")
	if err := lock("--tls-ca-file", caFile, "--bearer-file", tokenFile); !errors.Is(err, errUsage) {
		t.Fatalf("FENCEGW_BEARER_TOKEN and --bearer-file = %v, want a usage error", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/testjwt"
)

// jwtPolicy writes the demo policy with one client, pod, known by its
// JWT's subject.
func jwtPolicy(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "policy.yaml")
	src = append(src, "\nclients:\n  pod:\n    jwt: {subject: \"system:serviceaccount:billing:billing\"}\n    operations: [debit]\n"...)
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// getWith answers GET url with Authorization: Bearer jwt: the status and
// body.
func getWith(t *testing.T, url, jwt string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+jwt)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeJWTClients: with --jwt-jwks-file a client is known by its JWT;
// the JWKS file is read again when it changes, and a change that does not
// load keeps the keys before, logged and counted. A JWKS file missing,
// empty or malformed, or a policy of JWT clients without one, stops the
// start.
func TestServeJWTClients(t *testing.T) {
	dir := t.TempDir()
	pol := jwtPolicy(t)
	const iss, aud, sub = "https://kubernetes.default.svc", "fencegw", "system:serviceaccount:billing:billing"
	empty, malformed := filepath.Join(dir, "empty.json"), filepath.Join(dir, "malformed.json")
	writeFile(t, empty, "")
	writeFile(t, malformed, `{"keys": [{"kty": "EC"`)
	for _, tt := range []struct{ name, jwks, want string }{
		{"no JWKS for a policy of JWT clients", "", "set --jwt-jwks-file"},
		{"a missing JWKS", filepath.Join(dir, "none.json"), "no such file"},
		{"an empty JWKS", empty, "empty"},
		{"a malformed JWKS", malformed, "not a JSON Web Key Set"},
	} {
		cfg := serveConfigFor(t, "postgres://u@127.0.0.1:1/db", pol)
		cfg.JWT.JWKSFile, cfg.JWT.Issuer, cfg.JWT.Audience = tt.jwks, iss, aud
		if tt.jwks == "" {
			cfg.JWT.Issuer, cfg.JWT.Audience = "", ""
		}
		err := serve(context.Background(), cfg, func(string) { t.Error("serve started") })
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "--jwt-jwks-file") {
			t.Errorf("%s: serve = %v, want a refusal naming --jwt-jwks-file and %q", tt.name, err, tt.want)
		}
	}

	oldKey, newKey := testjwt.EC(t, "old"), testjwt.RSA(t, "new")
	jwks := filepath.Join(dir, "jwks.json")
	testjwt.WriteJWKS(t, jwks, oldKey)
	cfg := serveConfigFor(t, migrated(t), pol)
	cfg.JWT.JWKSFile, cfg.JWT.Issuer, cfg.JWT.Audience = jwks, iss, aud
	var log testenv.Buffer
	cfg.logOut = &log
	base := "http://" + runServe(t, cfg)
	url := base + "/v1/leases?resource=account/acct-1"
	byOld := oldKey.Sign(t, testjwt.Claims(iss, aud, sub))
	if code, body := getWith(t, url, byOld); code != http.StatusOK {
		t.Fatalf("pod by its JWT: %d %s", code, body)
	}
	expired := testjwt.Claims(iss, aud, sub)
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	if code, body := getWith(t, url, oldKey.Sign(t, expired)); code != 401 || !strings.Contains(body, "JWT expired") {
		t.Fatalf("an expired JWT: %d %s", code, body)
	}

	writeFile(t, jwks, `{"keys": [`)
	counted := `fencegw_credential_reload_failures_total{file="jwks"} 1`
	if !testenv.WaitFor(30*time.Second, func() bool {
		getWith(t, url, byOld) // a JWT's check reads the file again
		return strings.Contains(scrape(t, http.DefaultClient, base+"/metrics"), counted)
	}) {
		t.Fatalf("a malformed JWKS was not counted (%s); log:\n%s", counted, log.String())
	}
	if code, body := getWith(t, url, byOld); code != http.StatusOK {
		t.Fatalf("after a malformed JWKS the keys before must stay: %d %s", code, body)
	}
	testjwt.WriteJWKS(t, jwks, newKey)
	byNew := newKey.Sign(t, testjwt.Claims(iss, aud, sub))
	if !testenv.WaitFor(30*time.Second, func() bool { code, _ := getWith(t, url, byNew); return code == http.StatusOK }) {
		t.Fatal("a JWT of the new key is refused after the JWKS was replaced")
	}
	if code, body := getWith(t, url, byOld); code != 401 || !strings.Contains(body, "JWT key unknown") {
		t.Fatalf("a JWT of a key taken out of the JWKS: %d %s", code, body)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

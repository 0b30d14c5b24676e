package jwtauth_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/internal/harness/testjwt"
	"github.com/fencegw/fencegw/jwtauth"
)

// TestNewRefusesBadJWKS: a JWKS file missing, empty or malformed, or
// whose keys cannot be trusted, stops the start.
func TestNewRefusesBadJWKS(t *testing.T) {
	dir := t.TempDir()
	ec := testjwt.EC(t, "ec")
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding
	jwks := func(keys ...map[string]any) string {
		b, _ := json.Marshal(map[string]any{"keys": keys})
		return string(b)
	}
	changed := func(k map[string]any, key string, v any) map[string]any {
		c := map[string]any{}
		for n, x := range k {
			c[n] = x
		}
		c[key] = v
		return c
	}
	for _, tt := range []struct {
		name, content string
		want          error
		text          string
	}{
		{"missing", "-", os.ErrNotExist, "no such file"},
		{"empty", "", nil, "empty"},
		{"not JSON", "{keys: [", jwtauth.ErrBadJWKS, "not a JSON Web Key Set"},
		{"no keys", `{"keys": []}`, jwtauth.ErrBadJWKS, "no key to verify"},
		{"only an encryption key", jwks(changed(ec.JWK, "use", "enc")), jwtauth.ErrBadJWKS, "no key to verify"},
		{"only an EC P-384 key", jwks(changed(ec.JWK, "crv", "P-384")), jwtauth.ErrBadJWKS, "no key to verify"},
		{"an RSA key of 1024 bits", jwks(map[string]any{"kty": "RSA", "kid": "r", "n": b64.EncodeToString(small.N.Bytes()), "e": "AQAB"}), jwtauth.ErrBadJWKS, "n holds 128 bytes"},
		{"a private key", jwks(changed(ec.JWK, "d", "AAAA")), jwtauth.ErrBadJWKS, "a private key"},
		{"an EC point off the curve", jwks(changed(ec.JWK, "y", ec.JWK["x"])), jwtauth.ErrBadJWKS, `key 0 (kid "ec")`},
		{"bad base64", jwks(changed(ec.JWK, "x", "not base64!")), jwtauth.ErrBadJWKS, "x is not base64url"},
		{"a short HMAC secret", jwks(map[string]any{"kty": "oct", "kid": "h", "k": b64.EncodeToString([]byte("secret"))}), jwtauth.ErrBadJWKS, "k holds 6 bytes"},
		{"one kid twice", jwks(ec.JWK, testjwt.Ed25519(t, "ec").JWK), jwtauth.ErrBadJWKS, `kid "ec" twice`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".json")
			if tt.content != "-" {
				if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := jwtauth.New(jwtauth.Config{JWKSFile: path, Issuer: issuer, Audience: audience})
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("New = %v, want %v saying %q", err, tt.want, tt.text)
			}
			if strings.Contains(err.Error(), "AAAA") {
				t.Fatalf("the error %q quotes key material", err)
			}
		})
	}
	path := filepath.Join(dir, "good.json")
	testjwt.WriteJWKS(t, path, ec)
	if _, err := jwtauth.New(jwtauth.Config{JWKSFile: path, Issuer: issuer}); !errors.Is(err, jwtauth.ErrBadConfig) {
		t.Fatalf("without an audience: %v", err)
	}
	// A key of a type not verified with is skipped, not refused: an
	// issuer's JWKS may hold more than these.
	if err := os.WriteFile(path, []byte(jwks(changed(ec.JWK, "crv", "P-384"), changed(ec.JWK, "kid", "ec2"))), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := jwtauth.New(jwtauth.Config{JWKSFile: path, Issuer: issuer, Audience: audience})
	if err != nil {
		t.Fatalf("a JWKS with a P-384 key beside a P-256 one: %v", err)
	}
	if _, err := v.Verify(testjwt.SignWith(t, ec.Method, ec.Private, map[string]any{"kid": "ec2"}, testjwt.Claims(issuer, audience, subject))); err != nil {
		t.Fatalf("the P-256 key beside a skipped one: %v", err)
	}
}

package jwtauth_test

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fencegw/fencegw/internal/harness/testjwt"
	"github.com/fencegw/fencegw/jwtauth"
)

const (
	issuer   = "https://kubernetes.default.svc"
	audience = "fencegw"
	subject  = "system:serviceaccount:billing:billing"
)

// with returns the standard claims changed by set.
func with(set func(jwt.MapClaims)) jwt.MapClaims {
	c := testjwt.Claims(issuer, audience, subject)
	set(c)
	return c
}

func TestVerify(t *testing.T) {
	rs, es, ed, hs := testjwt.RSA(t, "rs"), testjwt.EC(t, "es"), testjwt.Ed25519(t, "ed"), testjwt.HMAC(t, "hs")
	path := filepath.Join(t.TempDir(), "jwks.json")
	testjwt.WriteJWKS(t, path, rs, es, ed, hs)
	v, err := jwtauth.New(jwtauth.Config{JWKSFile: path, Issuer: issuer, Audience: audience, Leeway: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []*testjwt.Key{rs, es, ed, hs} {
		if got, err := v.Verify(k.Sign(t, testjwt.Claims(issuer, audience, subject))); err != nil || got != subject {
			t.Errorf("%s: Verify = %q, %v; want %q", k.Method.Alg(), got, err, subject)
		}
	}

	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(&rs.Private.(*rsa.PrivateKey).PublicKey))})
	good := rs.Sign(t, testjwt.Claims(issuer, audience, subject))
	parts := strings.Split(good, ".")
	now := time.Now()
	tests := []struct {
		name  string
		token string
		want  error
		text  string
	}{
		{"alg none", testjwt.SignWith(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, map[string]any{"kid": "rs"}, testjwt.Claims(issuer, audience, subject)), jwtauth.ErrAlgorithm, "alg none is not accepted"},
		{"HS256 keyed with the RSA key's public bytes", testjwt.SignWith(t, jwt.SigningMethodHS256, rsaPEM, map[string]any{"kid": "rs"}, testjwt.Claims(issuer, audience, subject)), jwtauth.ErrAlgorithm, "alg HS256 does not fit its key, an RSA key for RS256"},
		{"RS384", testjwt.SignWith(t, jwt.SigningMethodRS384, rs.Private, map[string]any{"kid": "rs"}, testjwt.Claims(issuer, audience, subject)), jwtauth.ErrAlgorithm, "RS384 is not accepted"},
		{"ES256 under an Ed25519 kid", testjwt.SignWith(t, es.Method, es.Private, map[string]any{"kid": "ed"}, testjwt.Claims(issuer, audience, subject)), jwtauth.ErrAlgorithm, "does not fit"},
		{"a critical extension", testjwt.SignWith(t, rs.Method, rs.Private, map[string]any{"kid": "rs", "crit": []string{"x"}, "x": true}, testjwt.Claims(issuer, audience, subject)), jwtauth.ErrCritical, "crit"},
		{"an empty crit", testjwt.SignWith(t, rs.Method, rs.Private, map[string]any{"kid": "rs", "crit": []string{}}, testjwt.Claims(issuer, audience, subject)), jwtauth.ErrCritical, "crit"},
		{"unknown kid", testjwt.SignWith(t, rs.Method, rs.Private, map[string]any{"kid": "gone"}, testjwt.Claims(issuer, audience, subject)), jwtauth.ErrUnknownKey, "no key of the JWKS has its kid"},
		{"no kid among several keys", testjwt.SignWith(t, rs.Method, rs.Private, nil, testjwt.Claims(issuer, audience, subject)), jwtauth.ErrUnknownKey, "no kid"},
		{"another key's signature", testjwt.RSA(t, "rs").Sign(t, testjwt.Claims(issuer, audience, subject)), jwtauth.ErrSignature, "signature invalid"},
		{"claims changed after signing", parts[0] + "." + strings.Split(rs.Sign(t, testjwt.Claims(issuer, audience, "system:serviceaccount:ops:root")), ".")[1] + "." + parts[2], jwtauth.ErrSignature, "signature invalid"},
		{"expired", rs.Sign(t, with(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Hour).Unix() })), jwtauth.ErrExpired, "expired"},
		{"without exp", rs.Sign(t, with(func(c jwt.MapClaims) { delete(c, "exp") })), jwtauth.ErrExpired, "no exp"},
		{"not yet valid", rs.Sign(t, with(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() })), jwtauth.ErrNotYetValid, "not yet valid"},
		{"wrong audience", rs.Sign(t, with(func(c jwt.MapClaims) { c["aud"] = []string{"vault"} })), jwtauth.ErrAudience, "audience"},
		{"wrong issuer", rs.Sign(t, with(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })), jwtauth.ErrIssuer, "issuer"},
		{"no subject", rs.Sign(t, with(func(c jwt.MapClaims) { delete(c, "sub") })), jwtauth.ErrNoClient, "sub claim"},
		{"a number for subject", rs.Sign(t, with(func(c jwt.MapClaims) { c["sub"] = 7 })), jwtauth.ErrNoClient, "not a string"},
		{"a huge header", testjwt.SignWith(t, rs.Method, rs.Private, map[string]any{"kid": "rs", "x": strings.Repeat("A", jwtauth.MaxTokenBytes)}, testjwt.Claims(issuer, audience, subject)), jwtauth.ErrMalformed, "longer than"},
		{"two segments", parts[0] + "." + parts[1], jwtauth.ErrMalformed, "segments"},
		{"not base64url", "@@@." + parts[1] + "." + parts[2], jwtauth.ErrMalformed, "malformed"},
		{"header not JSON", "bm90IGpzb24." + parts[1] + "." + parts[2], jwtauth.ErrMalformed, "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Verify(tt.token)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) || got != "" {
				t.Fatalf("Verify = %q, %v; want %v saying %q", got, err, tt.want, tt.text)
			}
			for _, secret := range append(strings.Split(tt.token, "."), subject) {
				if len(secret) > 8 && strings.Contains(err.Error(), secret) {
					t.Fatalf("the error %q quotes the token", err)
				}
			}
		})
	}

	claim, err := jwtauth.New(jwtauth.Config{JWKSFile: path, Issuer: issuer, Audience: audience, ClientClaim: "client_id"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := claim.Verify(es.Sign(t, with(func(c jwt.MapClaims) { c["client_id"] = "billing" }))); got != "billing" || err != nil {
		t.Errorf("with ClientClaim client_id: %q, %v", got, err)
	}
}

// TestVerifierReloadsJWKS: keys added to the file verify once it is read
// again; a change that does not load keeps the keys before and is
// reported once.
func TestVerifierReloadsJWKS(t *testing.T) {
	a, b := testjwt.EC(t, "a"), testjwt.Ed25519(t, "b")
	path := filepath.Join(t.TempDir(), "jwks.json")
	testjwt.WriteJWKS(t, path, a)
	var mu sync.Mutex
	var reported []string
	v, err := jwtauth.New(jwtauth.Config{JWKSFile: path, Issuer: issuer, Audience: audience, ReloadInterval: 5 * time.Millisecond,
		OnReloadError: func(err error) { mu.Lock(); defer mu.Unlock(); reported = append(reported, err.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	byB := b.Sign(t, testjwt.Claims(issuer, audience, subject))
	if _, err := v.Verify(byB); !errors.Is(err, jwtauth.ErrUnknownKey) {
		t.Fatalf("b before it is in the file: %v", err)
	}
	testjwt.WriteJWKS(t, path, a, b)
	if !waitFor(func() bool { _, err := v.Verify(byB); return err == nil }) {
		t.Fatal("b's token does not verify after b was added to the file")
	}
	for i, bad := range []string{`{"keys": [`, "", `{"keys": []}`} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if !waitFor(func() bool { v.Verify(byB); mu.Lock(); defer mu.Unlock(); return len(reported) == i+1 }) {
			t.Fatalf("bad file %q: reported %q", bad, reported)
		}
		if got, err := v.Verify(byB); err != nil || got != subject {
			t.Fatalf("after bad file %q: %q, %v; want the keys before still in force", bad, got, err)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if !waitFor(func() bool { v.Verify(byB); mu.Lock(); defer mu.Unlock(); return len(reported) == 4 }) {
		t.Fatalf("a removed file: reported %q", reported)
	}
	if _, err := v.Verify(byB); err != nil {
		t.Fatalf("after the file was removed: %v", err)
	}
}

func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

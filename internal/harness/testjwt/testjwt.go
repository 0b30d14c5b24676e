// Package testjwt makes signing keys, JWKS files and JWTs for tests, with
// github.com/golang-jwt/jwt/v5.
package testjwt

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fencegw/fencegw/internal/harness/testcerts"
)

// Key is a signing key and the JWK of its public half.
type Key struct {
	Kid     string
	Method  jwt.SigningMethod
	Private any // *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey or []byte
	JWK     map[string]any
}

var b64 = base64.RawURLEncoding

// RSA makes an RS256 key of 2048 bits.
func RSA(t testing.TB, kid string) *Key {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{Kid: kid, Method: jwt.SigningMethodRS256, Private: k, JWK: map[string]any{
		"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
		"n": b64.EncodeToString(k.N.Bytes()), "e": b64.EncodeToString(big.NewInt(int64(k.E)).Bytes()),
	}}
}

// EC makes an ES256 key.
func EC(t testing.TB, kid string) *Key {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	point, err := k.PublicKey.Bytes() // 0x04 || x || y
	if err != nil {
		t.Fatal(err)
	}
	return &Key{Kid: kid, Method: jwt.SigningMethodES256, Private: k, JWK: map[string]any{
		"kty": "EC", "kid": kid, "crv": "P-256", "x": b64.EncodeToString(point[1:33]), "y": b64.EncodeToString(point[33:]),
	}}
}

// Ed25519 makes an EdDSA key.
func Ed25519(t testing.TB, kid string) *Key {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{Kid: kid, Method: jwt.SigningMethodEdDSA, Private: priv, JWK: map[string]any{
		"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": b64.EncodeToString(pub),
	}}
}

// HMAC makes an HS256 secret of 32 bytes.
func HMAC(t testing.TB, kid string) *Key {
	t.Helper()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	return &Key{Kid: kid, Method: jwt.SigningMethodHS256, Private: secret, JWK: map[string]any{
		"kty": "oct", "kid": kid, "alg": "HS256", "k": b64.EncodeToString(secret),
	}}
}

// JWKS is the key set of keys' public halves (an HMAC key's secret).
func JWKS(keys ...*Key) []byte {
	set := struct {
		Keys []map[string]any `json:"keys"`
	}{Keys: []map[string]any{}}
	for _, k := range keys {
		set.Keys = append(set.Keys, k.JWK)
	}
	b, _ := json.Marshal(set)
	return b
}

// WriteJWKS writes keys' JWKS to path, by a rename over the file before.
func WriteJWKS(t testing.TB, path string, keys ...*Key) {
	t.Helper()
	testcerts.Replace(t, path, JWKS(keys...))
}

// Claims are a JWT's claims for issuer, audience and subject, valid from
// a minute ago for an hour.
func Claims(iss, aud, sub string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{"iss": iss, "aud": []string{aud}, "sub": sub, "iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix()}
}

// Sign signs claims with k, its kid in the header.
func (k *Key) Sign(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	return SignWith(t, k.Method, k.Private, map[string]any{"kid": k.Kid}, claims)
}

// SignWith signs claims with any method and key, and header's fields
// added: for the tokens a verifier must refuse.
func SignWith(t testing.TB, m jwt.SigningMethod, key any, header map[string]any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, claims)
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

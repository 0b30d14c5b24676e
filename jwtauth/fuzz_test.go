package jwtauth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fencegw/fencegw/internal/harness/testjwt"
)

// FuzzParseJWKS feeds arbitrary bytes to the JWKS parser: no panics, a
// refusal is ErrBadJWKS, and every key accepted has the type of its one
// algorithm.
func FuzzParseJWKS(f *testing.F) {
	f.Add(testjwt.JWKS(testjwt.RSA(f, "rs"), testjwt.EC(f, "es"), testjwt.Ed25519(f, "ed"), testjwt.HMAC(f, "hs")))
	f.Add([]byte(`{"keys": [{"kty": "EC", "crv": "P-256", "x": "AAAA", "y": "AAAA"}]}`))
	f.Add([]byte(`{"keys": [{"kty": "RSA", "n": "AQAB", "e": "AQAB", "alg": "RS256"}]}`))
	f.Add([]byte(`{"keys": [{"kty": "oct", "k": "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0cw"}]}`))
	f.Add([]byte(`{"keys": null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ks, err := parseJWKS(data)
		if err != nil {
			if !errors.Is(err, ErrBadJWKS) {
				t.Fatalf("parseJWKS = %v, want ErrBadJWKS", err)
			}
			return
		}
		if len(ks.byKid) == 0 {
			t.Fatal("accepted a JWKS without a key")
		}
		for kid, k := range ks.byKid {
			ok := false
			switch pub := k.pub.(type) {
			case *rsa.PublicKey:
				ok = k.alg == "RS256" && pub.N.BitLen() >= minRSABits
			case *ecdsa.PublicKey:
				ok = k.alg == "ES256"
			case ed25519.PublicKey:
				ok = k.alg == "EdDSA" && len(pub) == ed25519.PublicKeySize
			case []byte:
				ok = k.alg == "HS256" && len(pub) >= 32
			}
			if !ok || !slices.Contains(algorithms, k.alg) {
				t.Fatalf("key %q: %T for %s", kid, k.pub, k.alg)
			}
		}
	})
}

// FuzzVerify feeds arbitrary text to a Verifier: no panics, nothing
// verifies but the one token its keys signed (base64url is decoded
// strictly: no other spelling of it), and every refusal names its check.
func FuzzVerify(f *testing.F) {
	rs, hs := testjwt.RSA(f, "rs"), testjwt.HMAC(f, "hs")
	path := filepath.Join(f.TempDir(), "jwks.json")
	if err := os.WriteFile(path, testjwt.JWKS(rs, hs), 0o600); err != nil {
		f.Fatal(err)
	}
	v, err := New(Config{JWKSFile: path, Issuer: "iss", Audience: "aud"})
	if err != nil {
		f.Fatal(err)
	}
	other := testjwt.HMAC(f, "hs")
	good := rs.Sign(f, testjwt.Claims("iss", "aud", "sub"))
	for _, seed := range []string{
		good, other.Sign(f, testjwt.Claims("iss", "aud", "sub")),
		"eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "a.b.c", "..", "eyJhbGciOiJIUzI1NiIsImtpZCI6ImhzIn0.e30.AAAA",
	} {
		f.Add(seed)
	}
	sentinels := []error{ErrMalformed, ErrAlgorithm, ErrUnknownKey, ErrSignature, ErrExpired, ErrNotYetValid, ErrAudience, ErrIssuer, ErrNoClient}
	f.Fuzz(func(t *testing.T, raw string) {
		sub, err := v.Verify(raw)
		if err == nil {
			if raw != good {
				t.Fatalf("verified %q as %q: only the test's keys sign, and the fuzzer holds none", raw, sub)
			}
			return
		}
		if !slices.ContainsFunc(sentinels, func(s error) bool { return errors.Is(err, s) }) {
			t.Fatalf("Verify(%q) = %v: names no check", raw, err)
		}
	})
}

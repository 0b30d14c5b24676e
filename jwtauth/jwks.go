package jwtauth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
)

// key is one verification key of a JWKS and the one algorithm it verifies.
type key struct {
	alg string // HS256, RS256, ES256 or EdDSA
	pub any    // []byte, *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey
	kty string
}

// keySet is a JWKS's usable keys by kid.
type keySet struct {
	byKid map[string]key
}

// jwk is one key of a JWKS (RFC 7517, 7518, 8037); members this package
// does not use (x5c, key_ops) are ignored.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
	Crv string `json:"crv"`
	N   string `json:"n"`
	E   string `json:"e"`
	X   string `json:"x"`
	Y   string `json:"y"`
	K   string `json:"k"`
	D   string `json:"d"`
}

// Bounds on RSA keys: fewer bits are breakable, more make a request as
// costly to verify as an attacker likes.
const (
	minRSABits = 2048
	maxRSABits = 8192
)

// parseJWKS reads a JWKS document. Keys for encryption (use: enc) and of
// types or algorithms this package does not verify with are skipped; a
// key of a type it does verify with that does not parse refuses the whole
// file, as does a file with no usable key or two keys of one kid.
func parseJWKS(data []byte) (keySet, error) {
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return keySet{}, fmt.Errorf("%w: not a JSON Web Key Set: %w", ErrBadJWKS, err)
	}
	ks := keySet{byKid: map[string]key{}}
	for i, j := range doc.Keys {
		k, usable, err := parseJWK(j)
		switch {
		case err != nil:
			return keySet{}, fmt.Errorf("%w: key %d (kid %q): %w", ErrBadJWKS, i, j.Kid, err)
		case !usable:
			continue
		}
		if _, dup := ks.byKid[j.Kid]; dup {
			return keySet{}, fmt.Errorf("%w: key %d: kid %q twice", ErrBadJWKS, i, j.Kid)
		}
		ks.byKid[j.Kid] = k
	}
	if len(ks.byKid) == 0 {
		return keySet{}, fmt.Errorf("%w: no key to verify signatures with (RSA for RS256, EC P-256 for ES256, OKP Ed25519 for EdDSA, oct for HS256)", ErrBadJWKS)
	}
	return ks, nil
}

// parseJWK returns j's key, or usable false for one this package does not
// verify with.
func parseJWK(j jwk) (key, bool, error) {
	if j.Use == "enc" {
		return key{}, false, nil
	}
	var k key
	switch {
	case j.Kty == "RSA" && (j.Alg == "" || j.Alg == "RS256"):
		k.alg = "RS256"
	case j.Kty == "EC" && j.Crv == "P-256" && (j.Alg == "" || j.Alg == "ES256"):
		k.alg = "ES256"
	case j.Kty == "OKP" && j.Crv == "Ed25519" && (j.Alg == "" || j.Alg == "EdDSA" || j.Alg == "Ed25519"):
		k.alg = "EdDSA"
	case j.Kty == "oct" && (j.Alg == "" || j.Alg == "HS256"):
		k.alg = "HS256"
	default:
		return key{}, false, nil
	}
	k.kty = j.Kty
	if j.D != "" && j.Kty != "oct" {
		return key{}, false, fmt.Errorf("a private key: a JWKS to verify with holds public keys only")
	}
	var err error
	switch j.Kty {
	case "RSA":
		k.pub, err = rsaKey(j)
	case "EC":
		var xy []byte
		if xy, err = coordinates(j, 32); err == nil {
			k.pub, err = ecdsa.ParseUncompressedPublicKey(elliptic.P256(), xy)
		}
	case "OKP":
		var x []byte
		if x, err = member("x", j.X, 32, 32); err == nil {
			k.pub = ed25519.PublicKey(x)
		}
	case "oct":
		// As long as the hash at least: a shorter secret is guessable.
		k.pub, err = member("k", j.K, 32, 1024)
	}
	return k, err == nil, err
}

func rsaKey(j jwk) (*rsa.PublicKey, error) {
	n, err := member("n", j.N, minRSABits/8, maxRSABits/8)
	if err != nil {
		return nil, err
	}
	e, err := member("e", j.E, 1, 4)
	if err != nil {
		return nil, err
	}
	pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	switch {
	case pub.N.BitLen() < minRSABits:
		return nil, fmt.Errorf("an RSA key of %d bits: want %d at least", pub.N.BitLen(), minRSABits)
	case pub.E < 3 || pub.E%2 == 0 || pub.E > 1<<31-1:
		return nil, fmt.Errorf("an RSA exponent of %d: want an odd number from 3", pub.E)
	}
	return pub, nil
}

// coordinates is an EC key's uncompressed point: 0x04, x, y.
func coordinates(j jwk, size int) ([]byte, error) {
	x, err := member("x", j.X, size, size)
	if err != nil {
		return nil, err
	}
	y, err := member("y", j.Y, size, size)
	if err != nil {
		return nil, err
	}
	return append(append([]byte{4}, x...), y...), nil
}

// member decodes a base64url member of between min and max bytes.
func member(name, s string, min, max int) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s is not base64url without padding", name)
	case len(b) < min || len(b) > max:
		return nil, fmt.Errorf("%s holds %d bytes, want %d to %d", name, len(b), min, max)
	}
	return b, nil
}

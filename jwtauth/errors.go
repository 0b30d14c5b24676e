package jwtauth

import "errors"

var (
	// ErrBadJWKS is a JWKS file that cannot be used: not JSON, no keys, a
	// key that does not parse.
	ErrBadJWKS = errors.New("jwtauth: bad JWKS")
	// ErrBadConfig is a Config without an issuer, audience or file.
	ErrBadConfig = errors.New("jwtauth: bad configuration")

	// ErrMalformed: not a JWT (segments, base64url, JSON), or too long.
	ErrMalformed = errors.New("jwtauth: malformed JWT")
	// ErrAlgorithm: alg none, unknown, not accepted, or not the one of
	// the key kid names.
	ErrAlgorithm = errors.New("jwtauth: JWT algorithm refused")
	// ErrCritical: the header lists extensions the verifier must
	// understand (crit, RFC 7515 §4.1.11); it understands none.
	ErrCritical = errors.New("jwtauth: JWT critical extension not understood")
	// ErrUnknownKey: kid names no key of the JWKS, or is missing where
	// the JWKS holds several.
	ErrUnknownKey = errors.New("jwtauth: JWT key unknown")
	// ErrSignature: the signature does not verify.
	ErrSignature = errors.New("jwtauth: JWT signature invalid")
	// ErrExpired: exp has passed, or is missing.
	ErrExpired = errors.New("jwtauth: JWT expired")
	// ErrNotYetValid: nbf is to come.
	ErrNotYetValid = errors.New("jwtauth: JWT not yet valid")
	// ErrAudience: aud does not hold the configured audience.
	ErrAudience = errors.New("jwtauth: JWT audience wrong")
	// ErrIssuer: iss is not the configured issuer.
	ErrIssuer = errors.New("jwtauth: JWT issuer wrong")
	// ErrNoClient: the claim that names the client is missing or not a
	// string.
	ErrNoClient = errors.New("jwtauth: JWT names no client")
)

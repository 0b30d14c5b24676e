// Package jwtauth verifies JWT bearer credentials, such as a Kubernetes
// pod's projected service account token, against the keys of a JWKS file
// that it reads again when the file changes, and returns the claim that
// names the client.
//
// # What is checked
//
// The signature, by the key the header's kid names, with the one algorithm
// that key's type allows: HS256 for an oct key, RS256 for RSA, ES256 for EC
// P-256, EdDSA for OKP Ed25519. An alg of none, or one that does not fit
// the key (HS256 "signed" with an RSA key's public bytes), is refused
// before any signature is computed. Then iss and aud against the
// configured issuer and audience, exp (required) and nbf (if present),
// with a small leeway for clocks apart. Parsing and the signature are
// github.com/golang-jwt/jwt/v5's; the JWKS is this package's (jwks.go): a
// file reloaded on change, whose keys are bound to one algorithm each, and
// RSA keys of fewer than 2048 bits refused, needs nothing of a JWKS
// client's HTTP refresh.
//
// # Errors
//
// Every refusal wraps one sentinel of this package that names the check
// that failed; none quotes the token or its claims.
package jwtauth

package jwtauth

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fencegw/fencegw/internal/reload"
)

// MaxTokenBytes bounds a JWT: a Kubernetes service account token is about
// a kilobyte; a larger one is refused before it is decoded.
const MaxTokenBytes = 8 << 10

// DefaultLeeway is how far exp and nbf may be off, for clocks apart.
const DefaultLeeway = 30 * time.Second

// algorithms are the ones a JWKS key may be bound to.
var algorithms = []string{"HS256", "RS256", "ES256", "EdDSA"}

// Config says which JWTs a Verifier accepts.
type Config struct {
	JWKSFile string // read again when it changes
	Issuer   string // iss must be this
	Audience string // aud must hold this
	// ClientClaim is the claim that names the client; "" is sub.
	ClientClaim string
	Leeway      time.Duration
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// ReloadInterval is the least time between two reads of the file;
	// 0: a second.
	ReloadInterval time.Duration
	// OnReloadError is told of a change to the file that did not load;
	// the keys before stay in force.
	OnReloadError func(error)
}

// Verifier verifies JWTs. It is safe for concurrent use.
type Verifier struct {
	keys   *reload.Files[keySet]
	claim  string
	parser *jwt.Parser
}

// New reads the JWKS file: a file missing, empty or without a usable key
// is an error.
func New(c Config) (*Verifier, error) {
	if c.JWKSFile == "" || c.Issuer == "" || c.Audience == "" {
		return nil, fmt.Errorf("%w: a JWKS file, an issuer and an audience are all needed", ErrBadConfig)
	}
	keys, err := reload.Load([]string{c.JWKSFile}, func(b [][]byte) (keySet, error) { return parseJWKS(b[0]) },
		reload.Options{Interval: c.ReloadInterval, Now: c.Now, OnError: c.OnReloadError})
	if err != nil {
		return nil, fmt.Errorf("jwtauth: %s: %w", c.JWKSFile, err)
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(algorithms), jwt.WithIssuer(c.Issuer), jwt.WithAudience(c.Audience),
		jwt.WithExpirationRequired(), jwt.WithLeeway(c.Leeway),
		// One spelling per token: no unused bits at the end of a segment.
		jwt.WithStrictDecoding(),
	}
	if c.Now != nil {
		opts = append(opts, jwt.WithTimeFunc(c.Now))
	}
	claim := c.ClientClaim
	if claim == "" {
		claim = "sub"
	}
	return &Verifier{keys: keys, claim: claim, parser: jwt.NewParser(opts...)}, nil
}

// Verify checks raw and returns the value of the claim that names the
// client.
func (v *Verifier) Verify(raw string) (string, error) {
	if len(raw) > MaxTokenBytes {
		return "", fmt.Errorf("%w: longer than %d bytes", ErrMalformed, MaxTokenBytes)
	}
	keys := v.keys.Current()
	claims := jwt.MapClaims{}
	tok, err := v.parser.ParseWithClaims(raw, claims, keys.lookup)
	if err != nil {
		return "", refusal(tok, err)
	}
	name, _ := claims[v.claim].(string)
	if name == "" {
		return "", fmt.Errorf("%w: its %s claim is missing, empty or not a string", ErrNoClient, v.claim)
	}
	return name, nil
}

// lookup is the key that verifies t: the one its kid names (or the only
// one, for a JWT without kid), if its algorithm is t's. A JWT whose header
// has crit is refused: its issuer says that whoever does not understand
// the extensions crit lists must not accept it (RFC 7515 §4.1.11), and
// this verifier understands none.
func (ks keySet) lookup(t *jwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		return nil, lookupError{fmt.Errorf("%w: its header has crit, and no extension is understood here", ErrCritical)}
	}
	kid, _ := t.Header["kid"].(string)
	k, ok := ks.byKid[kid]
	if !ok && kid == "" && len(ks.byKid) == 1 {
		for _, only := range ks.byKid {
			k, ok = only, true
		}
	}
	switch {
	case !ok && kid == "":
		return nil, lookupError{fmt.Errorf("%w: no kid, and the JWKS holds several keys", ErrUnknownKey)}
	case !ok:
		return nil, lookupError{fmt.Errorf("%w: no key of the JWKS has its kid", ErrUnknownKey)}
	case t.Method.Alg() != k.alg:
		return nil, lookupError{fmt.Errorf("%w: alg %s does not fit its key, an %s key for %s", ErrAlgorithm, t.Method.Alg(), k.kty, k.alg)}
	}
	return k.pub, nil
}

// refusal names the check a JWT failed, from jwt's error.
func refusal(tok *jwt.Token, err error) error {
	var looked lookupError
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	case tok == nil || tok.Method == nil:
		return fmt.Errorf("%w: alg missing or unknown", ErrAlgorithm)
	case !slices.Contains(algorithms, tok.Method.Alg()):
		return fmt.Errorf("%w: alg %s is not accepted (HS256, RS256, ES256, EdDSA)", ErrAlgorithm, tok.Method.Alg())
	case errors.As(err, &looked):
		return looked.error
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return ErrSignature
	case errors.Is(err, jwt.ErrTokenExpired):
		return ErrExpired
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return fmt.Errorf("%w: it has no exp", ErrExpired)
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return ErrNotYetValid
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return ErrAudience
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return ErrIssuer
	}
	return fmt.Errorf("%w: %w", ErrMalformed, err)
}

// lookupError carries lookup's refusal through jwt's error.
type lookupError struct{ error }

func (e lookupError) Unwrap() error { return e.error }

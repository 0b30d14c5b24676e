package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/fencegw/fencegw/policy"
)

type clientKey struct{}

// anonymous names a caller the policy does not: authentication is off, or
// it failed. The policy reserves the name.
const anonymous = policy.Anonymous

// maxBearerBytes bounds the credential of an Authorization header: a
// bearer token is tens of bytes, a Kubernetes service account token about
// one kilobyte.
const maxBearerBytes = 8 << 10

// authenticate admits a request only from a client the policy declares,
// proved by its bearer token, its JWT or its client certificate
// (identify). A
// policy without clients turns authentication off (for local
// development); serve logs a warning then.
//
// A request with more than one Authorization header is refused (400)
// before anything else, authentication on or off: a proxy in front may
// read another of them than the gateway would, and decide on a client
// the gateway does not serve.
func (g *Gateway) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := len(r.Header.Values("Authorization")); n > 1 {
			g.writeProblem(w, r, badRequest("%d Authorization headers: send one", n), problemScope{})
			return
		}
		if !g.cfg.Policy.AuthRequired() {
			next.ServeHTTP(w, r)
			return
		}
		c, err := g.identify(r)
		if err != nil {
			g.writeProblem(w, r, err, problemScope{})
			return
		}
		accessOf(r.Context()).client = c.Name
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientKey{}, c)))
	})
}

// identify returns the client r proves to be: the one its bearer
// credential names, or its client certificate. A request that carries
// both must name one client with both; a certificate that names no client
// leaves it to the bearer credential (mTLS as transport only). Errors wrap
// ErrUnauthorized and quote no credential.
func (g *Gateway) identify(r *http.Request) (*policy.Client, error) {
	pol := g.cfg.Policy
	var byCert *policy.Client
	cert := clientCert(r.Context())
	if cert != nil {
		c, err := pol.ClientByCertificate(cert)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnauthorized, err)
		}
		byCert = c
	}
	header := r.Header.Get("Authorization")
	if header == "" {
		switch {
		case byCert != nil:
			return byCert, nil
		case cert != nil:
			return nil, fmt.Errorf("%w: the client certificate names no client of the policy, and no Authorization header came with it", ErrUnauthorized)
		case pol.UsesCertificates():
			return nil, fmt.Errorf("%w: send Authorization: Bearer TOKEN, or a client certificate", ErrUnauthorized)
		}
		return nil, fmt.Errorf("%w: send Authorization: Bearer TOKEN", ErrUnauthorized)
	}
	c, err := g.byBearer(header)
	if err != nil {
		return nil, err
	}
	if byCert != nil && byCert != c {
		return nil, fmt.Errorf("%w: the client certificate and the bearer credential name different clients", ErrUnauthorized)
	}
	return c, nil
}

// byBearer returns the client whose credential an Authorization header
// carries: a bearer token, or a JWT.
func (g *Gateway) byBearer(header string) (*policy.Client, error) {
	scheme, bearer, _ := strings.Cut(header, " ")
	bearer = strings.TrimSpace(bearer)
	switch {
	case !strings.EqualFold(scheme, "Bearer") || bearer == "":
		return nil, fmt.Errorf("%w: send Authorization: Bearer TOKEN", ErrUnauthorized)
	case len(bearer) > maxBearerBytes:
		return nil, fmt.Errorf("%w: the bearer credential is longer than %d bytes", ErrUnauthorized, maxBearerBytes)
	}
	if c, ok := g.cfg.Policy.Authenticate(bearer); ok {
		return c, nil
	}
	// A JWT is three base64url segments; a bearer token that happens to
	// look like one was looked up first.
	if strings.Count(bearer, ".") != 2 {
		return nil, fmt.Errorf("%w: unknown bearer token", ErrUnauthorized)
	}
	if g.cfg.VerifyJWT == nil {
		return nil, fmt.Errorf("%w: unknown bearer token (a JWT, and this gateway verifies none)", ErrUnauthorized)
	}
	subject, err := g.cfg.VerifyJWT(bearer)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	c := g.cfg.Policy.ClientByJWTSubject(subject)
	if c == nil {
		return nil, fmt.Errorf("%w: the JWT names no client of the policy", ErrUnauthorized)
	}
	return c, nil
}

// authorize checks that the authenticated caller may call op.
func authorize(ctx context.Context, op string) error {
	c, _ := ctx.Value(clientKey{}).(*policy.Client)
	if c != nil && !c.MayCall(op) {
		return fmt.Errorf("%w: client %s may not call %s", ErrForbidden, c.Name, op)
	}
	return nil
}

// clientOf is the authenticated caller; nil when authentication is off.
func clientOf(ctx context.Context) *policy.Client {
	c, _ := ctx.Value(clientKey{}).(*policy.Client)
	return c
}

// clientName names the authenticated caller; "" when authentication is off.
func clientName(ctx context.Context) string {
	if c, _ := ctx.Value(clientKey{}).(*policy.Client); c != nil {
		return c.Name
	}
	return ""
}

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

// authenticate admits a request only with the bearer token of a client the
// policy declares. A policy without clients turns authentication off (for
// local development); serve logs a warning then.
func (g *Gateway) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.cfg.Policy.AuthRequired() {
			next.ServeHTTP(w, r)
			return
		}
		scheme, bearer, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || bearer == "" {
			g.writeProblem(w, r, fmt.Errorf("%w: send Authorization: Bearer TOKEN", ErrUnauthorized), problemScope{})
			return
		}
		c, ok := g.cfg.Policy.Authenticate(strings.TrimSpace(bearer))
		if !ok {
			g.writeProblem(w, r, fmt.Errorf("%w: unknown bearer token", ErrUnauthorized), problemScope{})
			return
		}
		accessOf(r.Context()).client = c.Name
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientKey{}, c)))
	})
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

package gateway

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/fencegw/fencegw/tlsfiles"
)

type certKey struct{}

// checkClientCert refuses, on every route, a request whose client
// certificate is not valid now against the CAs in force (or, with
// RequireClientCert, that has none), and hands a valid one to
// authentication. Checked per request rather than once per handshake: a
// CA taken out of the bundle, or a certificate that expires, ends a
// long-lived connection's access at once.
func (g *Gateway) checkClientCert(next http.Handler) http.Handler {
	if g.cfg.ClientCAs == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cert, err := tlsfiles.VerifyClient(r.TLS, g.cfg.ClientCAs(), time.Now())
		switch {
		case errors.Is(err, tlsfiles.ErrNoCertificate) && !g.cfg.RequireClientCert:
			next.ServeHTTP(w, r)
		case err != nil:
			g.writeProblem(w, r, fmt.Errorf("%w: %w", ErrUnauthorized, err), problemScope{})
		default:
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), certKey{}, cert)))
		}
	})
}

// clientCert is the request's verified client certificate, or nil.
func clientCert(ctx context.Context) *x509.Certificate {
	cert, _ := ctx.Value(certKey{}).(*x509.Certificate)
	return cert
}

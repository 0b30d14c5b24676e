package main

import (
	"log/slog"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/jwtauth"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tlsfiles"
)

// serveCredentials are serve's TLS files, JWKS and KEKs. They are loaded before
// anything else, so that a fault in one stops the start before any backend
// is waited for; a later change that does not load is logged and counted.
type serveCredentials struct {
	tls      *tlsfiles.Server  // nil: plain HTTP
	jwt      *jwtauth.Verifier // nil: no JWT accepted
	keks     authority.KEKs    // open the signing keys
	failures *prometheus.CounterVec
	clientCA bool // client certificates asked for
}

func loadCredentials(cfg serveConfig, pol *policy.Policy, log *slog.Logger) (*serveCredentials, error) {
	c := &serveCredentials{failures: newReloadFailures(), clientCA: cfg.TLS.ClientCAFile != ""}
	var err error
	if c.tls, err = cfg.TLS.server(log, c.failures); err != nil {
		return nil, err
	}
	if err := cfg.TLS.checkPolicy(pol); err != nil {
		return nil, err
	}
	if c.jwt, err = cfg.JWT.verifier(pol, log, c.failures); err != nil {
		return nil, err
	}
	if c.keks, err = cfg.KEK.keks(log, c.failures); err != nil {
		return nil, err
	}
	return c, nil
}

// configure gives the gateway what it checks credentials with, and the
// count of reload failures for its /metrics.
func (c *serveCredentials) configure(gc *gateway.Config) {
	gc.Collectors = append(gc.Collectors, c.failures)
	if c.jwt != nil {
		gc.VerifyJWT = c.jwt.Verify
	}
	if c.tls != nil && c.clientCA {
		gc.ClientCAs, gc.RequireClientCert = c.tls.ClientCAs, c.tls.RequireClientCert()
	}
}

// serve serves srv on ln until it is shut down: HTTPS when there is a
// certificate, where net/http answers plain HTTP with a 400 that says to
// use HTTPS.
func (c *serveCredentials) serve(srv *http.Server, ln net.Listener) error {
	if c.tls == nil {
		return srv.Serve(ln)
	}
	srv.TLSConfig = c.tls.Config()
	return srv.ServeTLS(ln, "", "")
}

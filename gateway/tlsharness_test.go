package gateway_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testcerts"
	"github.com/fencegw/fencegw/tlsfiles"
)

// tlsGateway is a gateway on h's pool, authority and policy served over
// TLS with serve's own configuration (tlsfiles), asking for client
// certificates issued by the CAs of a file, which it reads again when it
// changes.
type tlsGateway struct {
	h     *harness
	base  string
	roots *x509.CertPool // the server certificate's CA
}

// serveTLS starts a tlsGateway of h; clientCAFile may be "" (no client
// certificates asked for); optional lets clients connect without one.
func serveTLS(t *testing.T, h *harness, clientCAFile string, optional bool, tweaks ...func(*gateway.Config)) *tlsGateway {
	t.Helper()
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "gateway CA")
	certFile, keyFile := ca.Server(t, "localhost", "127.0.0.1").Write(t, dir, "gw")
	srv, err := tlsfiles.NewServer(tlsfiles.ServerFiles{CertFile: certFile, KeyFile: keyFile, ClientCAFile: clientCAFile, ClientCertOptional: optional},
		tlsfiles.Options{Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if clientCAFile != "" {
		tweaks = append(tweaks, func(c *gateway.Config) { c.ClientCAs, c.RequireClientCert = srv.ClientCAs, srv.RequireClientCert() })
	}
	gw, _, _ := gatewayWithPool(t, h.pool, h.auth, h.policy, tweaks...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: gw.Handler(), TLSConfig: srv.Config(), ErrorLog: slog.NewLogLogger(slog.NewTextHandler(io.Discard, nil), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- hs.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		hs.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Error(err)
		}
	})
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return &tlsGateway{h: h, base: "https://" + ln.Addr().String(), roots: roots}
}

// as is a harness whose requests go to g presenting cert, if not nil.
func (g *tlsGateway) as(cert *testcerts.Pair) *harness {
	if cert == nil {
		return g.presenting(nil)
	}
	c := cert.TLSCertificate(g.h.t)
	return g.presenting(&c)
}

// presenting is as with a tls.Certificate.
func (g *tlsGateway) presenting(cert *tls.Certificate) *harness {
	cfg := &tls.Config{RootCAs: g.roots}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	h := *g.h
	h.base = g.base
	h.client = &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: time.Minute}
	return &h
}

package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"

	"github.com/fencegw/fencegw/internal/reload"
)

// ServerFiles name a server's files.
type ServerFiles struct {
	CertFile, KeyFile string
	// ClientCAFile, if set, makes the handshake ask for a client
	// certificate; VerifyClient checks it against these CAs.
	ClientCAFile string
	// ClientCertOptional lets a client connect without a certificate
	// (it proves who it is otherwise); one it presents is still checked.
	ClientCertOptional bool
}

// Server is a server's TLS configuration, kept current as its files
// change.
type Server struct {
	pair     *reload.Files[*tls.Certificate]
	cas      *reload.Files[*x509.CertPool] // nil without a client CA file
	optional bool
}

// NewServer loads f's files; a file that is missing or does not load is
// an error.
func NewServer(f ServerFiles, o Options) (*Server, error) {
	if f.CertFile == "" || f.KeyFile == "" {
		return nil, fmt.Errorf("%w: a server needs both a certificate and its key", ErrBadOptions)
	}
	pair, err := loadPair(f.CertFile, f.KeyFile, o)
	if err != nil {
		return nil, err
	}
	s := &Server{pair: pair, optional: f.ClientCertOptional}
	if f.ClientCAFile != "" {
		if s.cas, err = loadCAs(f.ClientCAFile, o.reloadOptions("client-ca")); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Config is the server's tls.Config: TLS 1.2 or newer, the certificate in
// force on each handshake, and a request for the client's certificate
// when there is a client CA file.
func (s *Server) Config() *tls.Config {
	c := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return s.pair.Current(), nil
		},
	}
	if s.cas != nil {
		// The chain is checked per request (VerifyClient); the handshake
		// still proves the client holds the certificate's key.
		c.ClientAuth = tls.RequireAnyClientCert
		if s.optional {
			c.ClientAuth = tls.RequestClientCert
		}
	}
	return c
}

// ClientCAs returns the client CAs in force, or nil when the server has
// no client CA file.
func (s *Server) ClientCAs() *x509.CertPool {
	if s.cas == nil {
		return nil
	}
	return s.cas.Current()
}

// RequireClientCert reports whether every client must present a
// certificate.
func (s *Server) RequireClientCert() bool { return s.cas != nil && !s.optional }

// loadCAs loads a CA bundle, kept current.
func loadCAs(path string, o reload.Options) (*reload.Files[*x509.CertPool], error) {
	return reload.Load([]string{path}, func(c [][]byte) (*x509.CertPool, error) {
		return parseCAs(path, c[0])
	}, o)
}

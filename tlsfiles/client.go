package tlsfiles

import (
	"crypto/tls"
	"fmt"

	"github.com/fencegw/fencegw/internal/reload"
)

// ClientFiles name a client's files; each is optional, but a certificate
// needs its key.
type ClientFiles struct {
	// CAFile holds the CAs the server's certificate must chain to;
	// empty: the system's.
	CAFile string
	// CertFile and KeyFile are the client's certificate and key, for a
	// server that asks for one (mTLS).
	CertFile, KeyFile string
}

// Client returns a client's tls.Config: TLS 1.2 or newer, the server
// checked against f's CAs, and f's certificate, read again when its files
// change, for a server that asks for one. The CA file is read once.
func Client(f ClientFiles, o Options) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CAFile != "" {
		cas, err := loadCAs(f.CAFile, reload.Options{})
		if err != nil {
			return nil, err
		}
		c.RootCAs = cas.Current()
	}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, fmt.Errorf("%w: a client certificate needs its key, and a key its certificate", ErrBadOptions)
	}
	if f.CertFile != "" {
		pair, err := loadPair(f.CertFile, f.KeyFile, o)
		if err != nil {
			return nil, err
		}
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return pair.Current(), nil
		}
	}
	return c, nil
}

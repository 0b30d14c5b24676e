package tlsfiles

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// parseCAs reads a bundle of PEM certificates: every block must be one,
// and there must be at least one. A certificate that is not a CA is a
// trust anchor of its own (pinning).
func parseCAs(name string, data []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			if n > 0 && len(bytes.TrimSpace(rest)) > 0 {
				return nil, fmt.Errorf("%w: %s: text after certificate %d is not PEM", ErrBadFile, name, n)
			}
			break
		}
		n++
		if b.Type != "CERTIFICATE" {
			// The type only: the block may be a private key.
			return nil, fmt.Errorf("%w: %s: block %d is %q, want CERTIFICATE", ErrBadFile, name, n, b.Type)
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: certificate %d: %w", ErrBadFile, name, n, err)
		}
		pool.AddCert(cert)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: %s: no PEM certificate", ErrBadFile, name)
	}
	return pool, nil
}

// parsePair reads a certificate chain and its private key.
func parsePair(certName, keyName string, certPEM, keyPEM []byte) (*tls.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: certificate %s and key %s: %w", ErrBadFile, certName, keyName, err)
	}
	return &pair, nil
}

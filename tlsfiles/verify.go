package tlsfiles

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"
)

// VerifyClient checks the certificate a client presented on a connection:
// issued (through the intermediates it sent) by one of roots, valid at
// now, and for client authentication. It returns the certificate, or an
// error that says which check failed and quotes nothing of it but its
// validity dates.
func VerifyClient(cs *tls.ConnectionState, roots *x509.CertPool, now time.Time) (*x509.Certificate, error) {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		return nil, ErrNoCertificate
	}
	leaf := cs.PeerCertificates[0]
	switch {
	case now.After(leaf.NotAfter):
		return nil, fmt.Errorf("%w at %s", ErrExpired, leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return nil, fmt.Errorf("%w: valid from %s", ErrNotYetValid, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	intermediates := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		intermediates.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots: roots, Intermediates: intermediates, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	var (
		unknown x509.UnknownAuthorityError
		invalid x509.CertificateInvalidError
	)
	switch {
	case err == nil:
		return leaf, nil
	case errors.As(err, &unknown) && selfSigned(leaf):
		return nil, ErrSelfSigned
	case errors.As(err, &unknown):
		return nil, ErrUnknownCA
	case errors.As(err, &invalid) && invalid.Reason == x509.IncompatibleUsage:
		return nil, ErrUsage
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return nil, fmt.Errorf("%w: a certificate of its chain is expired or not yet valid", ErrInvalid)
	}
	return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
}

// selfSigned reports whether c is signed by its own key.
func selfSigned(c *x509.Certificate) bool {
	return bytes.Equal(c.RawIssuer, c.RawSubject) && c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) == nil
}

package tlsfiles

import "errors"

var (
	// ErrBadFile is a certificate, key or CA file that does not load.
	ErrBadFile = errors.New("tlsfiles: bad file")
	// ErrBadOptions is a set of files that cannot make a configuration
	// (a certificate without its key).
	ErrBadOptions = errors.New("tlsfiles: bad options")

	// ErrNoCertificate: the client presented no certificate.
	ErrNoCertificate = errors.New("tlsfiles: no client certificate")
	// ErrExpired: the client certificate's NotAfter has passed.
	ErrExpired = errors.New("tlsfiles: client certificate expired")
	// ErrNotYetValid: the client certificate's NotBefore is to come.
	ErrNotYetValid = errors.New("tlsfiles: client certificate not yet valid")
	// ErrSelfSigned: the client certificate signs itself, and the CA
	// bundle does not hold it.
	ErrSelfSigned = errors.New("tlsfiles: client certificate is self-signed, not issued by a trusted CA")
	// ErrUnknownCA: no CA of the bundle issued the client certificate.
	ErrUnknownCA = errors.New("tlsfiles: client certificate not issued by a trusted CA")
	// ErrUsage: the client certificate's extended key usage does not
	// include client authentication (a server's certificate).
	ErrUsage = errors.New("tlsfiles: client certificate not for client authentication (its extended key usage lacks clientAuth)")
	// ErrInvalid: the chain fails another check of x509.
	ErrInvalid = errors.New("tlsfiles: client certificate invalid")
)

package authority

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
)

// TLSProblem is what went wrong in a TLS handshake with etcd.
type TLSProblem int

const (
	// ServerNotTrusted: etcd's certificate did not verify (another CA
	// signed it, it does not name the endpoint's host, it expired).
	ServerNotTrusted TLSProblem = iota + 1
	// ClientRefused: etcd refused the handshake, usually the client
	// certificate: none sent where etcd requires one, or one it does not
	// trust.
	ClientRefused
	// NotTLS: the endpoint answered, but not in TLS.
	NotTLS
)

// TLSError says that etcd at Endpoint and this client cannot agree on
// TLS: no call will ever succeed, however long it retries.
type TLSError struct {
	Endpoint string
	Problem  TLSProblem
	Err      error
}

func (e *TLSError) Error() string {
	what := map[TLSProblem]string{
		ServerNotTrusted: "etcd's certificate is not trusted",
		ClientRefused:    "etcd refused the TLS handshake",
		NotTLS:           "etcd does not answer in TLS there",
	}[e.Problem]
	return fmt.Sprintf("TLS with etcd at %s: %s: %v", e.Endpoint, what, e.Err)
}

func (e *TLSError) Unwrap() error { return e.Err }

// Probe shakes hands, as Dial's client would, with every endpoint it
// would reach over TLS, all at once, until ctx ends. etcd's client, when a
// handshake fails, retries until its caller's context ends and then says
// only that time ran out; Probe says why at once. It returns nil if any
// endpoint completed its handshake, or none could be reached (etcd being
// down is no TLS problem), else the first endpoint's *TLSError.
func (c ClientConfig) Probe(ctx context.Context) error {
	type result struct {
		i   int
		err error
	}
	results := make(chan result, len(c.Endpoints))
	probing := 0
	for i, ep := range c.Endpoints {
		addr, cfg := c.tlsFor(ep)
		if cfg == nil {
			continue // plaintext: nothing to agree on
		}
		probing++
		go func() { results <- result{i, handshake(ctx, addr, cfg)} }()
	}
	errs := make([]error, len(c.Endpoints))
	for range probing {
		r := <-results
		if r.err == nil {
			return nil
		}
		errs[r.i] = r.err
	}
	for i, err := range errs {
		if p := classify(err); p != 0 {
			return &TLSError{Endpoint: c.Endpoints[i], Problem: p, Err: err}
		}
	}
	return nil
}

// tlsFor is the TCP address of endpoint and the TLS configuration etcd's
// client would use there, nil for plaintext (or a unix socket, which
// Probe leaves alone).
func (c ClientConfig) tlsFor(endpoint string) (string, *tls.Config) {
	scheme, addr := "", endpoint
	if u, err := url.Parse(endpoint); err == nil && strings.Contains(endpoint, "://") {
		scheme, addr = u.Scheme, u.Host
	}
	cfg := c.TLS
	switch {
	case scheme == "https" && cfg == nil:
		cfg = &tls.Config{} // the system's CAs, as etcd's client does
	case scheme != "https" && scheme != "":
		return addr, nil
	case cfg == nil:
		return addr, nil
	}
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	cfg.NextProtos = []string{"h2"} // gRPC's
	return addr, cfg
}

// handshake completes a TLS handshake with addr and reads the server's
// first bytes: in TLS 1.3 a server that refuses the client's certificate
// says so only after the client's side of the handshake is done. etcd
// (HTTP/2) speaks first, with its settings.
func handshake(ctx context.Context, addr string, cfg *tls.Config) error {
	d := tls.Dialer{Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if errors.Is(err, io.EOF) {
		return errClosedInHandshake // what a plaintext etcd does
	}
	if err != nil {
		return err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetReadDeadline(deadline)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	_, err = conn.Read(make([]byte, 1))
	return err
}

// errClosedInHandshake is a server that hung up on a ClientHello without
// a word of TLS.
var errClosedInHandshake = errors.New("the server closed the connection during the TLS handshake")

// classify is the TLS problem err shows, 0 for none (a network error).
func classify(err error) TLSProblem {
	var verify *tls.CertificateVerificationError
	var header tls.RecordHeaderError
	var op *net.OpError
	switch {
	case errors.As(err, &verify):
		return ServerNotTrusted
	case errors.As(err, &header) || errors.Is(err, errClosedInHandshake):
		return NotTLS
	case errors.As(err, &op) && op.Op == "remote error":
		return ClientRefused
	}
	return 0
}

// Package tlsfiles makes TLS configurations from PEM files and keeps them
// current as the files are replaced: the gateway's certificate and key,
// the CAs its clients' certificates must chain to, and a client's CA,
// certificate and key. TLS 1.2 is the oldest version either side speaks.
//
// # Reloading
//
// A server's certificate and key are read again, at most once a second,
// on a handshake; the client CA bundle when a request's certificate is
// checked. A change that does not load (a missing file, a key that does
// not match its certificate, a bundle that is not PEM) keeps the files as
// they were and is reported once through Options.OnReloadError. At start
// the same faults are errors: nothing is served with half a configuration.
//
// # Client certificates
//
// The handshake asks for a client certificate and checks only that the
// client holds its key; [VerifyClient] checks the chain, its validity and
// its usage for each request, against the CAs in force. So a refusal is an
// answer that says which check failed (rather than a handshake alert),
// a CA removed from the bundle or a certificate that expires ends a
// long-lived connection's access at once, and the caller of VerifyClient
// decides what a refusal looks like.
package tlsfiles

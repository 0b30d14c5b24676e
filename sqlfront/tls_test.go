package sqlfront_test

import (
	"context"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/testcerts"
	"github.com/fencegw/fencegw/sqlfront"
	"github.com/fencegw/fencegw/tlsfiles"
)

// TestTLS: over TLS (serve's own configuration, tlsfiles), a client
// certificate the policy maps to a client logs it in without a password,
// as that client only; a certificate of another CA is refused; and a
// password is taken over TLS from another host too.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ip := nonLoopback(t)
	ca, other := testcerts.NewCA(t, "front CA"), testcerts.NewCA(t, "another CA")
	caFile := ca.WriteCA(t, dir, "ca.crt")
	certFile, keyFile := ca.Server(t, "127.0.0.1", ip).Write(t, dir, "front")
	clientCert, clientKey := ca.Client(t, billing).Write(t, dir, "billing")
	otherCert, otherKey := other.Client(t, billing).Write(t, dir, "other")
	srv, err := tlsfiles.NewServer(tlsfiles.ServerFiles{CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile, ClientCertOptional: true},
		tlsfiles.Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	f := newFront(t, func(c *sqlfront.Config) { c.TLS, c.ClientCAs = srv.Config(), srv.ClientCAs })
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = f.srv.Serve(ln) }()
	ctx := context.Background()
	dsn := func(host, user, password, query string) string {
		u := url.URL{Scheme: "postgres", User: url.User(user), Host: host, Path: "/" + f.db,
			RawQuery: "sslmode=verify-full&sslrootcert=" + url.QueryEscape(caFile) + query}
		if password != "" {
			u.User = url.UserPassword(user, password)
		}
		return u.String()
	}
	withCert := func(cert, key string) string {
		return "&sslcert=" + url.QueryEscape(cert) + "&sslkey=" + url.QueryEscape(key)
	}
	for _, tc := range []struct {
		name, dsn, code, says string
	}{
		{"its certificate", dsn(f.addr, billing, "", withCert(clientCert, clientKey)), "", ""},
		{"its certificate as another client", dsn(f.addr, ledger, "", withCert(clientCert, clientKey)), "28000", "names client billing"},
		{"a certificate of another CA", dsn(f.addr, billing, "", withCert(otherCert, otherKey)), "28000", "client certificate refused"},
		{"a password over TLS from another host", dsn(ln.Addr().String(), billing, f.keys[billing], ""), "", ""},
	} {
		conn, err := pgx.Connect(ctx, tc.dsn)
		if code := sqlState(err); code != tc.code || err != nil && !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want SQLSTATE %q saying %q", tc.name, err, tc.code, tc.says)
			continue
		}
		if err != nil {
			continue
		}
		var who string
		if err := conn.QueryRow(ctx, "SELECT current_user").Scan(&who); err != nil || who != f.role {
			t.Errorf("%s: runs as %q (%v), want %s", tc.name, who, err, f.role)
		}
		conn.Close(ctx)
	}
}

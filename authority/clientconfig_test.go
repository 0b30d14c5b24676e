package authority_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// clientTLS is the client side of TLS from files: the CA that verifies
// the server, and a client certificate if certFile is not "".
func clientTLS(t *testing.T, caFile, certFile, keyFile string) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{RootCAs: x509.NewCertPool()}
	cfg.RootCAs.AppendCertsFromPEM(pem)
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

// TestProbe: against an etcd that serves TLS and wants client
// certificates, Probe passes a client it will serve, names what is wrong
// with one it will not (the words etcd's client never says: it retries
// until its caller's time runs out), and stays out of the way where no
// endpoint answers (down is not a TLS problem). Every refused client is
// refused by etcd too, so nothing it would have written lands.
func TestProbe(t *testing.T) {
	e := testenv.StartTLSEtcd(t)
	plain := strings.TrimPrefix(testenv.EtcdEndpoints()[0], "http://")
	good := clientTLS(t, e.CAFile, e.ClientCert, e.ClientKey)
	for _, tc := range []struct {
		name      string
		endpoints []string
		tls       *tls.Config
		want      authority.TLSProblem // 0: Probe passes
		words     string
	}{
		{"trusted, with a client certificate", e.Endpoints, good, 0, ""},
		{"trusted, at HOST:PORT", []string{strings.TrimPrefix(e.Endpoints[0], "https://")}, good, 0, ""},
		{"one endpoint down, one trusted", []string{"https://127.0.0.1:1", e.Endpoints[0]}, good, 0, ""},
		{"nothing listens", []string{"https://127.0.0.1:1"}, good, 0, ""},
		{"etcd signed by another CA", e.Endpoints, clientTLS(t, e.OtherCAFile, e.ClientCert, e.ClientKey), authority.ServerNotTrusted, "x509: certificate signed by unknown authority"},
		{"the system's CAs", e.Endpoints, nil, authority.ServerNotTrusted, "x509: certificate signed by unknown authority"},
		{"no client certificate", e.Endpoints, clientTLS(t, e.CAFile, "", ""), authority.ClientRefused, "certificate required"},
		{"a client certificate of another CA", e.Endpoints, clientTLS(t, e.CAFile, e.OtherClientCert, e.OtherClientKey), authority.ClientRefused, "remote error"},
		{"one down, the other untrusted", []string{"https://127.0.0.1:1", e.Endpoints[0]}, clientTLS(t, e.OtherCAFile, "", ""), authority.ServerNotTrusted, "unknown authority"},
		{"TLS to a plaintext etcd", []string{plain}, good, authority.NotTLS, "closed the connection during the TLS handshake"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := authority.ClientConfig{Endpoints: tc.endpoints, TLS: tc.tls}
			err := cc.ProbeAll(context.Background())
			var tlsErr *authority.TLSError
			switch {
			case tc.want == 0 && err != nil:
				t.Fatalf("Probe = %v, want nil", err)
			case tc.want != 0 && (!errors.As(err, &tlsErr) || tlsErr.Problem != tc.want || !strings.Contains(err.Error(), tc.words)):
				t.Fatalf("Probe = %v, want a TLSError, problem %d, saying %q", err, tc.want, tc.words)
			case tc.want != 0 && tlsErr.Endpoint != e.Endpoints[0] && tlsErr.Endpoint != plain:
				t.Fatalf("Probe's error names %s, want the endpoint that answered", tlsErr.Endpoint)
			}
		})
	}

	cli, err := authority.ClientConfig{Endpoints: e.Endpoints, TLS: good}.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := authority.NewEtcd(cli, testenv.KEK()).Revision(ctx); err != nil {
		t.Fatalf("a client Probe passed: Revision = %v", err)
	}
}

// TestDialWithUser: against an etcd with its auth on, Dial authenticates
// a user with its password; a wrong password is ErrAccessDenied at once,
// its error without the password; without a user, and for a user outside
// its role's keys, every call is refused with an error AccessDenied
// recognises, so serve stops waiting at once.
func TestDialWithUser(t *testing.T) {
	e := testenv.StartAuthEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cli, err := authority.ClientConfig{Endpoints: e.Endpoints, Username: e.GatewayUser, Password: e.GatewayPassword}.Dial()
	if err != nil {
		t.Fatalf("Dial as %s: %v", e.GatewayUser, err)
	}
	defer cli.Close()
	if _, err := authority.NewEtcd(cli, testenv.KEK()).Revision(ctx); err != nil {
		t.Fatalf("Revision as %s: %v", e.GatewayUser, err)
	}
	if _, err := cli.Put(ctx, "/elsewhere", "x"); !authority.AccessDenied(err) {
		t.Errorf("a write outside /fencegw/ = %v, want a refusal AccessDenied recognises", err)
	}

	_, err = authority.ClientConfig{Endpoints: e.Endpoints, Username: e.GatewayUser, Password: "wrong-password-7d3a"}.Dial()
	if !errors.Is(err, authority.ErrAccessDenied) || strings.Contains(err.Error(), "wrong-password-7d3a") {
		t.Errorf("Dial with a wrong password = %v, want ErrAccessDenied, without the password", err)
	}

	anon, err := authority.Dial(e.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if _, err := authority.NewEtcd(anon, testenv.KEK()).Revision(ctx); !authority.AccessDenied(err) {
		t.Errorf("Revision without a user = %v, want a refusal AccessDenied recognises", err)
	}
}

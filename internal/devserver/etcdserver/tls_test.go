package etcdserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/url"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencegw/fencegw/internal/harness/testcerts"
)

// TestClientTLS: with Options.TLS the server speaks TLS only, at https://
// endpoints, serves a client whose certificate its CA signed, and, with
// ClientCertAuth, refuses a handshake without one.
func TestClientTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "ca")
	certFile, keyFile := ca.Server(t, "127.0.0.1").Write(t, dir, "server")
	s, err := StartWith(context.Background(), Options{TLS: &TLS{
		CertFile: certFile, KeyFile: keyFile, CAFile: ca.WriteCA(t, dir, "ca.crt"), ClientCertAuth: true,
	}})
	if err != nil {
		t.Fatalf("StartWith: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if ep := s.Endpoints()[0]; !strings.HasPrefix(ep, "https://") {
		t.Fatalf("endpoint %s, want https://", ep)
	}

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM())
	client := ca.Client(t, "client")
	pair, err := tls.X509KeyPair(client.CertPEM, client.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: s.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		TLS: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}},
	})
	if err != nil {
		t.Fatalf("clientv3.New: %v", err)
	}
	defer cli.Close()
	put(t, cli, "k", "v")
	if got := get(t, cli, "k"); got != "v" {
		t.Errorf("Get k = %q, want v", got)
	}

	u, err := url.Parse(s.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatalf("handshake without a client certificate: %v; want it refused after the client's side", err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Errorf("read without a client certificate: %v, want etcd's alert: certificate required", err)
	}
}

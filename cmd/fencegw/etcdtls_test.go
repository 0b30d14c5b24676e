package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// etcdRevision is etcd's revision, read as admin: unchanged, nothing was
// written.
func etcdRevision(t *testing.T, cc authority.ClientConfig) int64 {
	t.Helper()
	cli, err := cc.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// adminTLS is the configuration of a client e serves.
func adminTLS(t *testing.T, e *testenv.TLSEtcd) authority.ClientConfig {
	t.Helper()
	cc, err := etcdAccess{CACert: e.CAFile, Cert: e.ClientCert, Key: e.ClientKey}.clientConfig(e.Endpoints, "test")
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// TestEtcdTLSCommands: keys, epoch and inspect reach an etcd that serves
// TLS and wants client certificates, with the flags or with etcdctl's
// variables alone. A wrong CA, a missing or foreign client certificate, a
// file that is missing or holds no certificate, half a pair and TLS to an
// http:// endpoint are refused at once, each in words naming the flag
// that fixes it, and nothing reaches etcd.
func TestEtcdTLSCommands(t *testing.T) {
	e := testenv.StartTLSEtcd(t)
	dbURL := migrated(t)
	ctx := t.Context()
	ep := e.Endpoints[0]
	good := []string{"--etcd", ep, "--etcd-cacert", e.CAFile, "--etcd-cert", e.ClientCert, "--etcd-key", e.ClientKey}
	for _, args := range [][]string{
		append([]string{"keys", "rotate"}, good...),
		append([]string{"epoch", "show", "--database-url", dbURL}, good...),
		append([]string{"inspect", "--database-url", dbURL}, good...),
	} {
		if err := execute(ctx, io.Discard, args...); err != nil {
			t.Fatalf("%s %s with TLS: %v", args[0], args[1], err)
		}
	}

	before := etcdRevision(t, adminTLS(t, e))
	missing := filepath.Join(t.TempDir(), "no-such-ca.crt")
	notPEM := filepath.Join(t.TempDir(), "empty.crt")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		usage bool
		words []string
	}{
		{"another CA", []string{"--etcd", ep, "--etcd-cacert", e.OtherCAFile, "--etcd-cert", e.ClientCert, "--etcd-key", e.ClientKey}, false,
			[]string{"x509: certificate signed by unknown authority", "--etcd-cacert must name the CA", ep}},
		{"no CA: the system's", []string{"--etcd", ep, "--etcd-cert", e.ClientCert, "--etcd-key", e.ClientKey}, false,
			[]string{"x509: certificate signed by unknown authority", "give --etcd-cacert"}},
		{"no client certificate", []string{"--etcd", ep, "--etcd-cacert", e.CAFile}, false,
			[]string{"certificate required", "give --etcd-cert and --etcd-key"}},
		{"a client certificate of another CA", []string{"--etcd", ep, "--etcd-cacert", e.CAFile, "--etcd-cert", e.OtherClientCert, "--etcd-key", e.OtherClientKey}, false,
			[]string{"etcd refused --etcd-cert"}},
		{"a missing CA file", []string{"--etcd", ep, "--etcd-cacert", missing}, false,
			[]string{"keys: --etcd-cacert: open " + missing, "no such file"}},
		{"a CA file without a certificate", []string{"--etcd", ep, "--etcd-cacert", notPEM}, false,
			[]string{"--etcd-cacert " + notPEM + ": no PEM certificate"}},
		{"a certificate without its key", []string{"--etcd", ep, "--etcd-cacert", e.CAFile, "--etcd-cert", e.ClientCert}, true,
			[]string{"--etcd-cert and --etcd-key go together"}},
		{"TLS to http://", []string{"--etcd", strings.Replace(ep, "https://", "http://", 1), "--etcd-cacert", e.CAFile}, true,
			[]string{"plaintext (http://)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := execute(ctx, io.Discard, append([]string{"keys", "rotate"}, tc.args...)...)
			if err == nil || errors.Is(err, errUsage) != tc.usage {
				t.Fatalf("keys rotate = %v, want an error (usage: %v)", err, tc.usage)
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("keys rotate = %v\nwant it to say %q", err, w)
				}
			}
		})
	}
	if after := etcdRevision(t, adminTLS(t, e)); after != before {
		t.Errorf("etcd's revision went from %d to %d: a refused command wrote", before, after)
	}

	t.Setenv("ETCDCTL_ENDPOINTS", ep)
	t.Setenv("ETCDCTL_CACERT", e.CAFile)
	t.Setenv("ETCDCTL_CERT", e.ClientCert)
	t.Setenv("ETCDCTL_KEY", e.ClientKey)
	if err := execute(ctx, io.Discard, "keys", "list"); err != nil {
		t.Fatalf("keys list with etcdctl's variables only: %v", err)
	}
}

// TestServeEtcdTLS: serve reaches an etcd that serves TLS and wants
// client certificates and becomes ready; with another CA it stops at once
// with the x509 error and the flag to fix, instead of waiting out its
// start-up time for an etcd that will never answer.
func TestServeEtcdTLS(t *testing.T) {
	e := testenv.StartTLSEtcd(t)
	cfg := serveConfigFor(t, migrated(t), "../../testdata/demo/policy.yaml")
	cfg.EtcdEndpoints = e.Endpoints
	cfg.EtcdAccess = etcdAccess{CACert: e.CAFile, Cert: e.ClientCert, Key: e.ClientKey}
	addr, stop := serveInBackground(t, cfg)
	if code := getStatus(t, "http://"+addr+"/readyz"); code != http.StatusOK {
		t.Errorf("readyz = %d, want 200", code)
	}
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}

	cfg.EtcdAccess.CACert = e.OtherCAFile
	ctx, cancel := context.WithTimeout(t.Context(), startupTimeout/2)
	defer cancel()
	err := serve(ctx, cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "x509: certificate signed by unknown authority") || !strings.Contains(err.Error(), "--etcd-cacert") {
		t.Fatalf("serve with another CA = %v, want the x509 error at once, naming --etcd-cacert", err)
	}
}

// serveInBackground runs serve until it is ready; stop ends it and
// returns its error.
func serveInBackground(t *testing.T, cfg serveConfig) (addr string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	addrs, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- serve(ctx, cfg, func(a string) { addrs <- a }) }()
	select {
	case addr = <-addrs:
	case err := <-done:
		cancel()
		t.Fatalf("serve stopped before it was ready: %v", err)
	}
	return addr, func() error { cancel(); return <-done }
}

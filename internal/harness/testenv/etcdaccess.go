package testenv

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/devserver/etcdserver"
	"github.com/fencegw/fencegw/internal/harness/testcerts"
)

// TLSEtcd is an etcd of a test's own that serves TLS only and wants a
// client certificate (etcd's --client-cert-auth), with the files a
// client needs to reach it, and files it must refuse.
type TLSEtcd struct {
	Server    *etcdserver.Server
	Endpoints []string // https://127.0.0.1:PORT
	// CAFile signed the server's certificate and ClientCert.
	CAFile string
	// ClientCert and ClientKey are a client certificate etcd accepts,
	// with common name "fencegw".
	ClientCert, ClientKey string
	// OtherCAFile is a CA that signed neither; OtherClientCert and
	// OtherClientKey are a client certificate it signed.
	OtherCAFile                     string
	OtherClientCert, OtherClientKey string
}

// StartTLSEtcd starts a TLSEtcd, its files in a folder of the test's,
// closed when the test ends. The server's certificate names 127.0.0.1
// and localhost.
func StartTLSEtcd(t testing.TB) *TLSEtcd {
	t.Helper()
	dir := t.TempDir()
	ca, other := testcerts.NewCA(t, "fencegw test etcd CA"), testcerts.NewCA(t, "another CA")
	e := &TLSEtcd{CAFile: ca.WriteCA(t, dir, "ca.crt"), OtherCAFile: other.WriteCA(t, dir, "other-ca.crt")}
	serverCert, serverKey := ca.Server(t, "127.0.0.1", "localhost").Write(t, dir, "server")
	e.ClientCert, e.ClientKey = ca.Client(t, "fencegw").Write(t, dir, "client")
	e.OtherClientCert, e.OtherClientKey = other.Client(t, "fencegw").Write(t, dir, "other-client")
	e.Server = PrivateEtcdWith(t, etcdserver.Options{TLS: &etcdserver.TLS{
		CertFile: serverCert, KeyFile: serverKey, CAFile: e.CAFile, ClientCertAuth: true,
	}})
	e.Endpoints = e.Server.Endpoints()
	return e
}

// AuthEtcd is an etcd of a test's own with its auth on: every request
// needs a user.
type AuthEtcd struct {
	Server    *etcdserver.Server
	Endpoints []string
	// RootPassword is the password of root, who may do anything.
	RootPassword string
	// GatewayUser may read and write the keys under /fencegw/ only, all
	// a gateway needs; GatewayPassword is its password.
	GatewayUser, GatewayPassword string
}

// StartAuthEtcd starts an AuthEtcd (plaintext), closed when the test
// ends.
func StartAuthEtcd(t testing.TB) *AuthEtcd {
	t.Helper()
	srv, cli := PrivateEtcd(t)
	e := &AuthEtcd{Server: srv, Endpoints: srv.Endpoints(),
		RootPassword: "root-secret-4f1c", GatewayUser: "gateway", GatewayPassword: "gateway-secret-9b2e"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	steps := []func() error{
		func() error { _, err := cli.RoleAdd(ctx, "root"); return err },
		func() error { _, err := cli.UserAdd(ctx, "root", e.RootPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, "fencegw"); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, "fencegw", "/fencegw/", clientv3.GetPrefixRangeEnd("/fencegw/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, e.GatewayUser, e.GatewayPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, e.GatewayUser, "fencegw"); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("testenv: turn etcd's auth on, step %d: %v", i+1, err)
		}
	}
	return e
}

package authority_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/devserver/etcdserver"
	"github.com/fencegw/fencegw/internal/harness/testcerts"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// TestGrantAccess: on an etcd with TLS and client certificates required,
// GrantAccess turns etcd's auth on with the gateways' user limited to
// /fencegw/ (a broader permission and another role it had are taken
// away) and root for operators, each known by its certificate's common
// name; run again by root it changes nothing, run by the gateway it is
// refused. Then the gateway's certificate reads and writes its keys and
// does what a gateway does, and nothing else; a certificate of the CA
// etcd trusts whose name is no user reads and writes nothing (etcd
// checks no permission to grant a lease: that it may do, and attach no
// key to it); one of another CA is refused in the handshake.
func TestGrantAccess(t *testing.T) {
	dir := t.TempDir()
	etcdCA, appCA := testcerts.NewCA(t, "etcd CA"), testcerts.NewCA(t, "clients CA")
	caFile := etcdCA.WriteCA(t, dir, "etcd-ca.crt")
	serverCert, serverKey := etcdCA.Server(t, "127.0.0.1").Write(t, dir, "server")
	srv := testenv.PrivateEtcdWith(t, etcdserver.Options{TLS: &etcdserver.TLS{CertFile: serverCert, KeyFile: serverKey, CAFile: caFile, ClientCertAuth: true}})
	dial := func(ca *testcerts.CA, cn string) *clientv3.Client {
		cert, key := ca.Client(t, cn).Write(t, dir, cn)
		cli, err := authority.ClientConfig{Endpoints: srv.Endpoints(), TLS: clientTLS(t, caFile, cert, key)}.Dial()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cli.Close() })
		return cli
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, gateway, member := dial(etcdCA, "root"), dial(etcdCA, "fencegw"), dial(etcdCA, "etcd1")

	if on, known := authority.NewEtcd(root, nil).AuthEnabled(ctx); on || !known {
		t.Fatalf("AuthEnabled before = %t, %t; want off, known", on, known)
	}
	// What a careless hand gave the role and the user before.
	if _, err := root.RoleAdd(ctx, "fencegw"); err != nil {
		t.Fatal(err)
	}
	if _, err := root.RoleGrantPermission(ctx, "fencegw", "\x00", "\x00", clientv3.PermissionType(clientv3.PermReadWrite)); err != nil {
		t.Fatal(err)
	}
	if _, err := root.RoleAdd(ctx, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := root.UserAddWithOptions(ctx, "fencegw", "", &clientv3.UserAddOptions{NoPassword: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.UserGrantRole(ctx, "fencegw", "ops"); err != nil {
		t.Fatal(err)
	}
	done, err := authority.GrantAccess(ctx, root, "fencegw")
	if err != nil {
		t.Fatalf("GrantAccess = %v, %v", done, err)
	}
	t.Logf("GrantAccess: %q", done)
	if len(done) < 5 {
		t.Fatalf("GrantAccess did %q: want the broad permission and the other role revoked, the prefix granted, root made, auth on", done)
	}
	if again, err := authority.GrantAccess(ctx, root, "fencegw"); err != nil || len(again) != 0 {
		t.Fatalf("GrantAccess again, as root = %q, %v; want nothing to do", again, err)
	}
	if _, err := authority.GrantAccess(ctx, gateway, "fencegw"); !authority.AccessDenied(err) {
		t.Fatalf("GrantAccess as the gateway = %v, want refused", err)
	}
	if on, known := authority.NewEtcd(gateway, nil).AuthEnabled(ctx); !on || !known {
		t.Fatalf("AuthEnabled after, as the gateway = %t, %t; want on, known", on, known)
	}

	if _, err := gateway.Put(ctx, "/fencegw/probe", "x"); err != nil {
		t.Fatalf("the gateway writes its keys: %v", err)
	}
	if _, err := gateway.Get(ctx, "/fencegw/", clientv3.WithPrefix()); err != nil {
		t.Fatalf("the gateway reads its keys: %v", err)
	}
	a := authority.NewEtcd(gateway, testenv.KEK())
	l, err := a.Acquire(ctx, "r", authority.AcquireOptions{TTL: time.Minute})
	if err != nil {
		t.Fatalf("the gateway grants a lease: %v", err)
	}
	if err := a.Validate(ctx, "r", "", l.Token, tokens.ValidateHolder); err != nil {
		t.Fatalf("the gateway validates its token: %v", err)
	}
	if err := a.ReadStoreSize(ctx); err != nil {
		t.Fatalf("the gateway reads etcd's store size: %v", err)
	}
	for what, call := range map[string]func() error{
		"write outside /fencegw/":   func() error { _, err := gateway.Put(ctx, "/elsewhere", "x"); return err },
		"read everything":           func() error { _, err := gateway.Get(ctx, "\x00", clientv3.WithFromKey()); return err },
		"add a user":                func() error { _, err := gateway.UserAdd(ctx, "mallory", "pw"); return err },
		"grant itself more":         func() error { _, err := gateway.RoleGrantPermission(ctx, "fencegw", "\x00", "\x00", 2); return err },
		"turn the auth off":         func() error { _, err := gateway.AuthDisable(ctx); return err },
		"a member's cert: read":     func() error { _, err := member.Get(ctx, "/fencegw/", clientv3.WithPrefix()); return err },
		"a member's cert: write":    func() error { _, err := member.Put(ctx, "/fencegw/token-keys/x", "x"); return err },
		"a member's cert: add user": func() error { _, err := member.UserAdd(ctx, "etcd1", "pw"); return err },
		"a member's cert: a key on its lease": func() error {
			l, err := member.Grant(ctx, 60)
			if err != nil {
				return err
			}
			_, err = member.Put(ctx, "/fencegw/locks/r/x", "x", clientv3.WithLease(l.ID))
			return err
		},
	} {
		if err := call(); !authority.AccessDenied(err) {
			t.Errorf("%s: %v, want refused", what, err)
		}
	}
	if users, err := root.UserList(ctx); err != nil || len(users.Users) != 2 {
		t.Fatalf("root lists the users: %v, %v; want root and fencegw", users, err)
	}

	cert, key := appCA.Client(t, "fencegw").Write(t, dir, "app")
	err = authority.ClientConfig{Endpoints: srv.Endpoints(), TLS: clientTLS(t, caFile, cert, key)}.ProbeAll(ctx)
	var tlsErr *authority.TLSError
	if !errors.As(err, &tlsErr) || tlsErr.Problem != authority.ClientRefused {
		t.Fatalf("a certificate of another CA, named as the gateway's user: %v, want refused in the handshake", err)
	}
}

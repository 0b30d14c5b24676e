package testenv

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencegw/fencegw/internal/devserver/etcdserver"
)

// EtcdClient returns a new client for the shared etcd, closed when the test
// ends. The etcd is shared by every test in the binary, so tests should keep
// their keys under a prefix of their own (t.Name() works).
func EtcdClient(t testing.TB) *clientv3.Client {
	t.Helper()
	e, err := get()
	if err != nil {
		t.Fatal(err)
	}
	return newClient(t, e.etcdEndpoints)
}

// NewEtcdClient returns a client for endpoints, closed when the test ends.
func NewEtcdClient(t testing.TB, endpoints []string) *clientv3.Client {
	t.Helper()
	return newClient(t, endpoints)
}

// PrivateEtcd starts an etcd of the test's own, for a test that changes
// what every test would otherwise share (the epoch key, the cluster
// itself), and a client for it. Both are closed when the test ends, the
// client first; the test may close the server earlier.
func PrivateEtcd(t testing.TB) (*etcdserver.Server, *clientv3.Client) {
	t.Helper()
	srv, err := etcdserver.Start(context.Background(), "")
	if err != nil {
		t.Fatalf("testenv: private etcd: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, newClient(t, srv.Endpoints())
}

// PrivateEtcdWith starts an etcd of the test's own as opts say (TLS,
// client certificates), closed when the test ends. The test makes its
// clients: they need what opts asked for.
func PrivateEtcdWith(t testing.TB, opts etcdserver.Options) *etcdserver.Server {
	t.Helper()
	srv, err := etcdserver.StartWith(context.Background(), opts)
	if err != nil {
		t.Fatalf("testenv: private etcd: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func newClient(t testing.TB, endpoints []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		// The default client logger reports every retry at info level.
		Logger: zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("testenv: etcd client: %v", err)
	}
	t.Cleanup(func() {
		// context.Canceled means the test already closed it.
		if err := cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("testenv: close etcd client: %v", err)
		}
	})
	return cli
}

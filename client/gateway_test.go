package client_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/node"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/schema"
)

// demoPolicy is the demo policy text: debit and credit on account/{account};
// acct-1 to acct-100 start at 1000 cents.
func demoPolicy(t testing.TB) string {
	t.Helper()
	src, err := os.ReadFile("../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// newGateway serves a real gateway on a fresh database (gateway schema and
// the demo application migrated) and the binary's shared etcd, stopped when
// the test ends. It returns the gateway's base URL.
func newGateway(t *testing.T, policyYAML string) string {
	t.Helper()
	srv, stop, err := startGateway(testenv.NewDatabase(t), testenv.EtcdClient(t), policyYAML)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return srv.URL
}

// startGateway migrates the database at dbURL and serves a gateway on it
// and etcd; stop shuts the server and its pool.
func startGateway(dbURL string, etcd *clientv3.Client, policyYAML string) (srv *httptest.Server, stop func(), err error) {
	return startGatewayOn(dbURL, authority.NewEtcd(etcd, testenv.KEK()), policyYAML)
}

// startGatewayOn is startGateway with the gateway's authority given, for a
// test that acts on it (rotates its keys).
func startGatewayOn(dbURL string, auth *authority.Etcd, policyYAML string) (srv *httptest.Server, stop func(), err error) {
	if err := schema.Up(dbURL, schema.Gateway(), schema.Dir("../testdata/demo/migrations", "demo_schema_migrations")); err != nil {
		return nil, nil, err
	}
	pol, err := policy.Parse("policy.yaml", []byte(policyYAML))
	if err != nil {
		return nil, nil, err
	}
	version, err := schema.Latest(schema.Gateway())
	if err != nil {
		return nil, nil, err
	}
	pool, err := fence.NewPool(context.Background(), dbURL)
	if err != nil {
		return nil, nil, err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	nd, err := node.New(node.Config{Pool: pool, Authority: auth, Policy: pol, Logger: log})
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	gw, err := gateway.New(gateway.Config{Pool: pool, Authority: auth, Policy: pol, Node: nd, SchemaVersion: version, Logger: log})
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	gw.SetReady(true)
	srv = httptest.NewServer(gw.Handler())
	return srv, func() { srv.Close(); pool.Close() }, nil
}

// exampleGateway is a gateway for Example functions, which have no
// testing.T: it makes its own database on the test server and its own etcd
// client, and Close undoes all of it.
type exampleGateway struct {
	URL   string
	close func()
}

func (g *exampleGateway) Close() { g.close() }

// startExampleGateway panics when it cannot start: an example cannot fail
// any other way.
func startExampleGateway() *exampleGateway {
	g, err := newExampleGateway()
	if err != nil {
		panic(err)
	}
	return g
}

func newExampleGateway() (*exampleGateway, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := testenv.AdminURL()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	name := "fencegw_test_example_" + hex.EncodeToString(b)
	if err := adminExec(ctx, admin, "CREATE DATABASE "+name); err != nil {
		return nil, err
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = adminExec(ctx, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	u, err := url.Parse(admin)
	if err != nil {
		drop()
		return nil, err
	}
	u.Path = "/" + name
	etcd, err := clientv3.New(clientv3.Config{Endpoints: testenv.EtcdEndpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		drop()
		return nil, err
	}
	src, err := os.ReadFile("../testdata/demo/policy.yaml")
	if err != nil {
		etcd.Close()
		drop()
		return nil, err
	}
	srv, stop, err := startGateway(u.String(), etcd, string(src))
	if err != nil {
		etcd.Close()
		drop()
		return nil, fmt.Errorf("example gateway: %w", err)
	}
	return &exampleGateway{URL: srv.URL, close: func() { stop(); etcd.Close(); drop() }}, nil
}

func adminExec(ctx context.Context, adminURL, sql string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

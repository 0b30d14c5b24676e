// Package testgw serves a real gateway for a test: a fresh database with
// the gateway's schema and an application's migrations, the test binary's
// shared etcd (package testenv), and a policy file, with its node beside
// it recording refusals as serve's does. Examples and client tests use it;
// the gateway package's own tests have a richer harness.
package testgw

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/guard"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/node"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/schema"
)

// Options say what to serve.
type Options struct {
	Policy string // path of the policy file
	// Migrations are the application's migration folder and the table that
	// records their version; empty for none.
	Migrations, MigrationsTable string
	// Guard installs the guard triggers of the policy's guarded tables.
	Guard bool
	// Config, if set, adjusts the gateway's configuration.
	Config func(*gateway.Config)
	// TLS, if set, serves HTTPS with it (its GetCertificate honoured).
	TLS *tls.Config
}

// Gateway is a gateway serving one test, stopped when the test ends.
type Gateway struct {
	URL         string // base URL, http://127.0.0.1:port (https:// with Options.TLS)
	DatabaseURL string
	Pool        *pgxpool.Pool
	Policy      *policy.Policy
	Gateway     *gateway.Gateway
	// Node is the gateway's node, its audit running: a test runs the
	// other loops it needs.
	Node *node.Node
}

// Start serves a gateway as opts say, or fails the test.
func Start(t testing.TB, opts Options) *Gateway {
	t.Helper()
	dbURL := testenv.NewDatabase(t)
	sources := []schema.Source{schema.Gateway()}
	if opts.Migrations != "" {
		sources = append(sources, schema.Dir(opts.Migrations, opts.MigrationsTable))
	}
	if err := schema.Up(dbURL, sources...); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Load(opts.Policy)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if opts.Guard {
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		err = guard.Install(ctx, conn, pol)
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
	pool, err := fence.NewPool(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	version, err := schema.Latest(schema.Gateway())
	if err != nil {
		t.Fatal(err)
	}
	cfg := gateway.Config{
		Pool: pool, Authority: authority.NewEtcd(testenv.EtcdClient(t), testenv.KEK()), Policy: pol, SchemaVersion: version,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if opts.Config != nil {
		opts.Config(&cfg)
	}
	nd := NewNode(t, &cfg)
	gw, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := nd.Watchdog().Check(ctx); err != nil {
		t.Fatal(err)
	}
	gw.SetReady(true)
	Run(t, nd.RunAudit)
	url := serve(t, gw.Handler(), opts.TLS)
	return &Gateway{URL: url, DatabaseURL: dbURL, Pool: pool, Policy: pol, Gateway: gw, Node: nd}
}

// NewNode makes the node of a gateway of cfg, as serve does (its pool,
// authority, policy, logger and fence setting), and sets cfg.Node to it.
func NewNode(t testing.TB, cfg *gateway.Config) *node.Node {
	t.Helper()
	nd, err := node.New(node.Config{Pool: cfg.Pool, Authority: cfg.Authority, Policy: cfg.Policy, Logger: cfg.Logger, UnsafeNoFence: cfg.UnsafeNoFence})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Node = nd
	return nd
}

// Run runs loop (one of a node's) until the test ends, and waits for it
// to return.
func Run(t testing.TB, loop func(context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); loop(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// serve serves h until the test ends and returns its base URL: HTTPS with
// cfg if set. Not httptest's StartTLS: it would add a certificate of its
// own, served instead of cfg's to a client that names no server (an IP
// address).
func serve(t testing.TB, h http.Handler, cfg *tls.Config) string {
	if cfg == nil {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, TLSConfig: cfg, ErrorLog: log.New(io.Discard, "", 0)}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { srv.Close(); <-done })
	return "https://" + ln.Addr().String()
}

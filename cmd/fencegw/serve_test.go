package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/devserver/pgcluster"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

func serveConfigFor(t *testing.T, dbURL, policyPath string) serveConfig {
	t.Helper()
	return serveConfig{
		Listen: "127.0.0.1:0", DatabaseURL: dbURL, EtcdEndpoints: testenv.EtcdEndpoints(), PolicyPath: policyPath,
		MaxBodyBytes: 1 << 16, WriteTimeout: 5 * time.Second, ShutdownTimeout: 5 * time.Second,
		IdempotencyRetention: time.Hour, AuthorityCheck: time.Second, LogFormat: "text", LogLevel: "info",
		KEK: kekFlags{File: testenv.KEKFile(t)},
	}
}

// TestServeLogsDeprecatedWords: a policy in the former words serves, and
// serve logs each former word once as it starts.
func TestServeLogsDeprecatedWords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, former := formerDemo(t)
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(former), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := serveConfigFor(t, migrated(t), path)
	logs := &testenv.Buffer{}
	cfg.logOut = logs
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	ready, served := make(chan string, 1), make(chan error, 1)
	go func() { served <- serve(sctx, cfg, func(a string) { ready <- a }) }()
	select {
	case <-ready:
	case err := <-served:
		t.Fatalf("serve of a policy in former words: %v\n%s", err, logs)
	case <-ctx.Done():
		t.Fatalf("serve never became ready:\n%s", logs)
	}
	stop()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
	for _, word := range []string{"resources: is deprecated", "key: is deprecated"} {
		if n := strings.Count(logs.String(), word); n != 1 {
			t.Errorf("serve logged %q %d times, want once:\n%s", word, n, logs)
		}
	}
}

func migrated(t *testing.T) string {
	t.Helper()
	dbURL := testenv.NewDatabase(t)
	if err := execute(context.Background(), io.Discard, "migrate", "--database-url", dbURL, "up"); err != nil {
		t.Fatal(err)
	}
	if err := execute(context.Background(), io.Discard, "migrate", "--database-url", dbURL, "--dir", "../../testdata/demo/migrations", "--table", "demo_schema_migrations", "up"); err != nil {
		t.Fatal(err)
	}
	return dbURL
}

func TestServeRefusesAnUnmigratedDatabase(t *testing.T) {
	cfg := serveConfigFor(t, testenv.NewDatabase(t), "../../testdata/demo/policy.yaml")
	err := serve(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "fencegw migrate up") {
		t.Fatalf("serve on an empty database = %v, want advice to run `fencegw migrate up`", err)
	}
}

func TestServeRefusesPolicySQLTheDatabaseRejects(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(src), "SET balance_cents = balance_cents - :amount_cents", "SET balance = balance - :amount_cents", 1)
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	err = serve(context.Background(), serveConfigFor(t, migrated(t), path), nil)
	if err == nil || !strings.Contains(err.Error(), "operations.debit.statements[0]") || !strings.Contains(err.Error(), `column "balance"`) {
		t.Fatalf("serve with a bad column = %v, want a problem naming operations.debit.statements[0]", err)
	}
}

// TestServeShutsDownGracefully: on SIGTERM (ctx cancelled) /readyz turns
// 503 while the listener still serves, asking clients to close their
// connections, for the shutdown delay or until a second signal; then
// serve drains and returns nil.
func TestServeShutsDownGracefully(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	hurry := make(chan struct{})
	cfg := serveConfigFor(t, migrated(t), "../../testdata/demo/policy.yaml")
	cfg.ShutdownDelay, cfg.hurry = time.Hour, hurry
	go func() { done <- serve(ctx, cfg, func(addr string) { addrs <- addr }) }()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("serve stopped: %v", err)
	}
	if code := getStatus(t, "http://"+addr+"/readyz"); code != http.StatusOK {
		t.Fatalf("readyz = %d", code)
	}
	huge, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/livez", nil)
	huge.Header.Set("X-Padding", strings.Repeat("x", maxHeaderBytes+8192)) // net/http allows 4 KiB of slack
	if resp, err := http.DefaultClient.Do(huge); err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a request with more than %d bytes of headers: %v %v; want 431", maxHeaderBytes, resp, err)
	} else {
		resp.Body.Close()
	}
	cancel()
	for getStatus(t, "http://"+addr+"/readyz") != http.StatusServiceUnavailable {
		select {
		case err := <-done:
			t.Fatalf("serve returned %v before its shutdown delay ended", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	resp, err := http.Get("http://" + addr + "/v1/leases?resource=account/acct-1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !resp.Close {
		t.Fatalf("during the shutdown delay GET /v1/leases = %d, close %v; want it still served, with Connection: close", resp.StatusCode, resp.Close)
	}
	close(hurry)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve after cancel = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after the second signal")
	}
	if _, err := http.Get("http://" + addr + "/livez"); err == nil {
		t.Fatal("still serving after shutdown")
	}
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestPoolSettings: the pool is sized four connections per core and the
// sessions' lock_timeout is three quarters of --write-timeout, unless the
// database URL says otherwise.
func TestPoolSettings(t *testing.T) {
	const base = "postgres://u@127.0.0.1:1/db"
	for _, tt := range []struct {
		url         string
		maxConns    int32
		lockTimeout string
	}{
		{base, defaultPoolSize(), "3750"},
		{base + "?pool_max_conns=3", 3, "3750"},
		{base + "?lock_timeout=250", defaultPoolSize(), "250"},
		{"host=127.0.0.1 port=1 user=u dbname=db pool_max_conns=2", 2, "3750"},
	} {
		pool, err := openPool(context.Background(), serveConfig{DatabaseURL: tt.url, WriteTimeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("%s: %v", tt.url, err)
		}
		cfg := pool.Config()
		pool.Close()
		if cfg.MaxConns != tt.maxConns || cfg.ConnConfig.RuntimeParams["lock_timeout"] != tt.lockTimeout {
			t.Errorf("%s: pool of %d, lock_timeout %q; want %d, %q", tt.url, cfg.MaxConns, cfg.ConnConfig.RuntimeParams["lock_timeout"], tt.maxConns, tt.lockTimeout)
		}
	}
}

// TestServeConfigCheck: settings that cannot work are refused as usage
// errors before anything starts.
func TestServeConfigCheck(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*serveConfig)
		ok     bool
	}{
		{"defaults", func(*serveConfig) {}, true},
		{"an explicit limit of writes in flight", func(c *serveConfig) { c.MaxInFlight = 16 }, true},
		{"a negative limit of writes in flight", func(c *serveConfig) { c.MaxInFlight = -1 }, false},
		{"no body allowed", func(c *serveConfig) { c.MaxBodyBytes = 0 }, false},
		{"no write timeout", func(c *serveConfig) { c.WriteTimeout = 0 }, false},
		{"no database", func(c *serveConfig) { c.DatabaseURL = "" }, false},
		{"an unknown log format", func(c *serveConfig) { c.LogFormat = "yaml" }, false},
		{"an unknown log level", func(c *serveConfig) { c.LogLevel = "verbose" }, false},
		{"a debug log level", func(c *serveConfig) { c.LogLevel = "debug" }, true},
		{"a negative shutdown delay", func(c *serveConfig) { c.ShutdownDelay = -time.Second }, false},
		{"pruning off", func(c *serveConfig) { c.PruneEvery = 0 }, true},
		{"a negative pruning interval", func(c *serveConfig) { c.PruneEvery = -time.Minute }, false},
		{"a TLS certificate and key", func(c *serveConfig) { c.TLS.CertFile, c.TLS.KeyFile = "gw.crt", "gw.key" }, true},
		{"a TLS certificate without its key", func(c *serveConfig) { c.TLS.CertFile = "gw.crt" }, false},
		{"a client CA without TLS", func(c *serveConfig) { c.TLS.ClientCAFile = "ca.pem" }, false},
		{"an unknown client auth", func(c *serveConfig) { c.TLS.ClientAuth = "maybe" }, false},
		{"a JWKS, an issuer and an audience", func(c *serveConfig) { c.JWT.JWKSFile, c.JWT.Issuer, c.JWT.Audience = "jwks.json", "iss", "aud" }, true},
		{"a JWKS without an audience", func(c *serveConfig) { c.JWT.JWKSFile, c.JWT.Issuer = "jwks.json", "iss" }, false},
		{"an issuer without a JWKS", func(c *serveConfig) { c.JWT.Issuer = "iss" }, false},
	} {
		cfg := serveConfigFor(t, "postgres://u@127.0.0.1:1/db", "policy.yaml")
		tt.change(&cfg)
		err := cfg.check()
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, errUsage)) {
			t.Errorf("%s: check() = %v, want ok=%v (or a usage error)", tt.name, err, tt.ok)
		}
	}
}

// TestServeWaitsForPostgreSQL: a gateway started while its PostgreSQL is
// down (restarting, failing over) waits for it and becomes ready once it
// is up, instead of exiting; a database that answers with a wrong schema
// still fails at once (TestServeRefusesAnUnmigratedDatabase).
func TestServeWaitsForPostgreSQL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	port, err := pgcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: as root, PostgreSQL runs as another user, who must be
	// able to enter the folder.
	dir, err := os.MkdirTemp("", "fencegw-serve-wait-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := pgcluster.Options{Dir: dir, Port: port, Settings: map[string]string{"fsync": "off"}}
	pg, err := pgcluster.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := execute(ctx, io.Discard, "migrate", "--database-url", pg.URL(), "up"); err != nil {
		t.Fatal(err)
	}
	if err := execute(ctx, io.Discard, "migrate", "--database-url", pg.URL(), "--dir", "../../testdata/demo/migrations", "--table", "demo_schema_migrations", "up"); err != nil {
		t.Fatal(err)
	}
	url := pg.URL()
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	// Bring PostgreSQL up only once serve says it is waiting for it.
	w := startWaiting(ctx, t, serveConfigFor(t, url, "../../testdata/demo/policy.yaml"), "PostgreSQL")
	pg, err = pgcluster.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Stop()
	w.readyAndStopped(ctx, t)
}

// TestServeWaitsForEtcd: a gateway started while nothing listens at its
// etcd address waits for it, saying so, and serves once it answers,
// instead of exiting. etcd's client itself waits for a connection here;
// asking again while etcd answers "unavailable" is TestRetryWhileUnavailable's.
func TestServeWaitsForEtcd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	port, err := pgcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cfg := serveConfigFor(t, migrated(t), "../../testdata/demo/policy.yaml")
	cfg.EtcdEndpoints = []string{addr} // nothing listens there yet
	w := startWaiting(ctx, t, cfg, "etcd")
	// etcd comes up at that address: a forwarder to the suite's etcd.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go forward(ln, strings.TrimPrefix(testenv.EtcdEndpoints()[0], "http://"))
	w.readyAndStopped(ctx, t)
}

// waitingServe is serve started while a backend it needs is down.
type waitingServe struct {
	what   string
	addrs  chan string
	served chan error
	stop   context.CancelFunc
}

// startWaiting starts serve with cfg and returns once its log says it is
// waiting for what (PostgreSQL, etcd), failing t if it gives up instead.
func startWaiting(ctx context.Context, t *testing.T, cfg serveConfig, what string) *waitingServe {
	t.Helper()
	logs := &testenv.Buffer{}
	cfg.logOut = logs
	sctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	w := &waitingServe{what: what, addrs: make(chan string, 1), served: make(chan error, 1), stop: stop}
	go func() { w.served <- serve(sctx, cfg, func(a string) { w.addrs <- a }) }()
	waiting := testenv.WaitFor(time.Minute, func() bool {
		select {
		case err := <-w.served:
			t.Fatalf("serve gave up while %s was down: %v", what, err)
		default:
		}
		return strings.Contains(logs.String(), "start-up waiting for "+what)
	})
	if !waiting {
		t.Fatalf("serve never said it waits for %s:\n%s", what, logs)
	}
	return w
}

// readyAndStopped checks that serve became ready once its backend came
// up, and stops cleanly.
func (w *waitingServe) readyAndStopped(ctx context.Context, t *testing.T) {
	t.Helper()
	select {
	case <-w.addrs:
	case err := <-w.served:
		t.Fatalf("serve stopped instead of waiting for %s: %v", w.what, err)
	case <-ctx.Done():
		t.Fatalf("serve never became ready after %s came up", w.what)
	}
	w.stop()
	if err := <-w.served; err != nil {
		t.Fatalf("serve after stop: %v", err)
	}
}

// forward copies every connection accepted on ln to and from target,
// until ln is closed.
func forward(ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			defer u.Close()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			_, _ = io.Copy(c, u)
		}()
	}
}

// TestRetryWhileUnavailable: serve's start-up asks etcd again while it
// answers "unavailable" (no leader, being restored), returns any other
// answer at once, and gives up with the last error when its context ends.
func TestRetryWhileUnavailable(t *testing.T) {
	calls := 0
	err := retryWhile(t.Context(), etcdUnavailable, func() error {
		if calls++; calls < 3 {
			return fmt.Errorf("read revision: %w", authority.ErrUnavailable)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("= %v after %d calls, want nil after 3: asked again while unavailable", err, calls)
	}
	calls = 0
	other := errors.New("a foreign key in etcd")
	if err := retryWhile(t.Context(), etcdUnavailable, func() error { calls++; return other }); err != other || calls != 1 {
		t.Fatalf("= %v after %d calls, want the other error at once", err, calls)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := retryWhile(ctx, etcdUnavailable, func() error { return authority.ErrUnavailable }); !errors.Is(err, authority.ErrUnavailable) {
		t.Fatalf("with its context ended = %v, want the last unavailable error", err)
	}
}

package conformance_test

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/testgw"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/schema"
)

// env is what one runner runs against: its own etcd (a scenario rotates
// and retires signing keys, which would refuse other runners' tokens),
// its own database, the main replica behind the proxy, and the replicas
// and gateways a scenario adds.
type env struct {
	etcd   *clientv3.Client
	dbURL  string
	pool   *pgxpool.Pool
	main   *replica
	proxy  *proxy
	client *client.Client // the harness's own, straight to the main replica

	mu       sync.Mutex
	replicas []*replica // every one started, for key reloads
}

// replica is one gateway process's worth: a gateway on a listener of its
// own, which Kill closes with every connection, as a crash would.
type replica struct {
	URL  string
	auth *authority.Etcd
	srv  *http.Server

	mu     sync.Mutex
	counts map[string]int // requests by kind
}

func newEnv(t *testing.T) *env {
	t.Helper()
	_, etcd := testenv.PrivateEtcd(t)
	e := &env{etcd: etcd, dbURL: testenv.NewDatabase(t)}
	if err := schema.Up(e.dbURL, schema.Gateway(), schema.Dir("../../testdata/demo/migrations", "demo_schema_migrations")); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(context.Background(), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	e.pool = pool
	e.main = e.startReplica(t, e.dbURL, conformancePolicy(t), nil)
	e.proxy = newProxy(t, e.main.URL)
	e.client = client.New(e.main.URL)
	return e
}

// conformancePolicy is the demo policy (accounts acct-1 to acct-100 at
// 1000 cents, debit, credit, transfer, open_account, job/ leases) with
// what the scenarios need besides: pool/{pool}, a semaphore of 2 permits
// whose work op logs under the permit's slot. Its balance is the fenced
// read the scenarios use.
func conformancePolicy(t testing.TB) string {
	t.Helper()
	src, err := os.ReadFile("../../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(string(src), "operations:\n", `  pool:
    template: "pool/{pool}"
    permits: 2

operations:
  work:
    resource: pool
    args:
      pool: {type: string, max_length: 32}
    statements:
      - sql: |
          INSERT INTO demo.write_log (resource, epoch, revision, operation, account, amount_cents)
          VALUES (:_resource, :_epoch, :_revision, 'work', :pool, 0)

`, 1)
}

// startReplica serves a gateway of policyYAML on the database at dbURL
// (migrated) and the env's etcd, until t ends or Kill; config adjusts its
// configuration (TLS, JWTs).
func (e *env) startReplica(t testing.TB, dbURL, policyYAML string, config func(*gateway.Config, *http.Server)) *replica {
	t.Helper()
	pol, err := policy.Parse("policy.yaml", []byte(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	version, err := schema.Latest(schema.Gateway())
	if err != nil {
		t.Fatal(err)
	}
	pool, err := fence.NewPool(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	r := &replica{auth: authority.NewEtcd(e.etcd, testenv.KEK()), counts: map[string]int{}}
	cfg := gateway.Config{Pool: pool, Authority: r.auth, Policy: pol, SchemaVersion: version,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	r.srv = &http.Server{ErrorLog: log.New(io.Discard, "", 0)}
	if config != nil {
		config(&cfg, r.srv)
	}
	testgw.NewNode(t, &cfg)
	gw, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gw.SetReady(true)
	h := gw.Handler()
	r.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.counts[requestKind(req)]++
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	// Decided before serving: Serve sets up HTTP/2, which gives a server
	// without a TLSConfig an empty one, so reading it afterwards raced
	// with Serve and named a plain replica https.
	scheme, tls := "http://", r.srv.TLSConfig != nil
	if tls {
		scheme = "https://"
	}
	go func() {
		defer close(done)
		if tls {
			_ = r.srv.ServeTLS(ln, "", "")
		} else {
			_ = r.srv.Serve(ln)
		}
	}()
	t.Cleanup(func() { r.Kill(); <-done })
	r.URL = scheme + ln.Addr().String()
	e.mu.Lock()
	e.replicas = append(e.replicas, r)
	e.mu.Unlock()
	return r
}

// Kill closes the replica's listener and every connection at once.
func (r *replica) Kill() { _ = r.srv.Close() }

func (r *replica) count(kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[kind]
}

// reloadKeys makes every replica read the signing keys now, as each does
// by itself every few seconds, so that a rotation or a retirement is
// everywhere before the scenario goes on.
func (e *env) reloadKeys(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.replicas {
		if _, err := r.auth.ReloadKeys(ctx); err != nil {
			return err
		}
	}
	return nil
}

// count returns a query's one integer, or fails the scenario's test.
func (e *env) count(t testing.TB, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := e.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// balance is an account's balance in the database.
func (e *env) balance(t testing.TB, account string) int64 {
	t.Helper()
	return e.count(t, "SELECT balance_cents FROM demo.accounts WHERE id = $1", account)
}

package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/testgw"
	"github.com/fencegw/fencegw/node"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/schema"
)

func TestLiveAndReady(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	if r := h.do(http.MethodGet, "/livez", nil, ""); r.Status != http.StatusOK {
		t.Fatalf("livez: %d", r.Status)
	}
	if r := h.do(http.MethodGet, "/readyz", nil, ""); r.Status != http.StatusOK {
		t.Fatalf("readyz: %d %s", r.Status, r.Body)
	}
	r := h.do(http.MethodGet, "/metrics", nil, "")
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "fencegw_etcd_revision") {
		t.Fatalf("metrics: %d, no fencegw_etcd_revision", r.Status)
	}
	if !strings.Contains(string(r.Body), `fencegw_build_info{goversion="`+runtime.Version()+`"`) {
		t.Fatalf("metrics: no fencegw_build_info naming %s", runtime.Version())
	}
}

// gatewayOn builds a gateway whose PostgreSQL is dbURL (migrated or not)
// and whose etcd is the shared one.
func gatewayOn(t *testing.T, dbURL string) (*gateway.Gateway, string) {
	t.Helper()
	return gatewayWith(t, dbURL, testenv.EtcdClient(t))
}

func gatewayWith(t *testing.T, dbURL string, cli *clientv3.Client) (*gateway.Gateway, string) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.ConnectTimeout = time.Second
	fence.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// Its backends may be dead on purpose: answer within seconds.
	gw, _, base := gatewayWithPool(t, pool, authority.NewEtcd(cli, testenv.KEK()), demoPolicy(t, "monotonic"), func(c *gateway.Config) { c.WriteTimeout = 2 * time.Second })
	return gw, base
}

// gatewayWithPool serves policyYAML on pool and auth, with its node
// recording refusals; tweaks change the Config before the gateway and its
// node are made.
func gatewayWithPool(t *testing.T, pool *pgxpool.Pool, auth *authority.Etcd, policyYAML string, tweaks ...func(*gateway.Config)) (*gateway.Gateway, *node.Node, string) {
	t.Helper()
	pol, err := policy.Parse("p.yaml", []byte(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	version, _ := schema.Latest(schema.Gateway())
	cfg := gateway.Config{
		Pool: pool, Authority: auth, Policy: pol, SchemaVersion: version,
		// Patient: a test's write waiting on a row lock must not give up
		// while a loaded machine runs the test's next steps.
		WriteTimeout: 30 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, tweak := range tweaks {
		tweak(&cfg)
	}
	nd := testgw.NewNode(t, &cfg)
	gw, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gw.SetReady(true)
	testgw.Run(t, nd.RunAudit)
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(srv.Close)
	return gw, nd, srv.URL
}

func TestNotReadyWithoutSchemaOrWhenDraining(t *testing.T) {
	gw, base := gatewayOn(t, testenv.NewDatabase(t)) // never migrated
	h := &harness{t: t, base: base}
	if r := h.do(http.MethodGet, "/readyz", nil, ""); r.Status != http.StatusServiceUnavailable || !strings.Contains(string(r.Body), "postgres") {
		t.Fatalf("readyz on an unmigrated database: %d %s, want 503 naming postgres", r.Status, r.Body)
	}
	gw.SetReady(false)
	if r := h.do(http.MethodGet, "/readyz", nil, ""); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("readyz while draining: %d, want 503", r.Status)
	}
}

// TestDatabaseDownIsUnavailable: with PostgreSQL unreachable a write is 503
// and says nothing was written.
func TestDatabaseDownIsUnavailable(t *testing.T) {
	_, base := gatewayOn(t, "postgres://postgres@127.0.0.1:1/none?sslmode=disable")
	h := &harness{t: t, base: base}
	l := (&harness{t: t, base: base}).mustAcquire("account/acct-61", 5, 0)
	r := h.write("debit", l.Token, debit("acct-61", 1))
	if r.Status != http.StatusServiceUnavailable || r.Problem.Kind() != "unavailable" || r.Problem.Outcome != "not-applied" ||
		!strings.Contains(r.Problem.Detail, "nothing was written") || r.Header.Get("Retry-After") == "" {
		t.Fatalf("write with PostgreSQL down: %d %s, want 503 unavailable, nothing written", r.Status, r.Body)
	}
	r = h.do(http.MethodGet, "/readyz", nil, "")
	if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("readyz with PostgreSQL down: %d", r.Status)
	}
	if body := string(r.Body); strings.Contains(body, "127.0.0.1:1") || strings.Contains(body, "postgres@") || strings.Contains(body, "dial") {
		t.Fatalf("readyz shows connection details: %s", body)
	}
	h.release(l)
}

// TestReadinessIsCached: however many callers probe /readyz at once, the
// gateway asks PostgreSQL once a second at most (counted on the wire).
func TestReadinessIsCached(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	var trips tripCounter
	counted := countedGateway(t, h, &trips)
	if r := counted.do(http.MethodGet, "/readyz", nil, ""); r.Status != http.StatusOK {
		t.Fatalf("readyz: %d %s", r.Status, r.Body)
	}
	trips.take()
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			if r := counted.do(http.MethodGet, "/readyz", nil, ""); r.Status != http.StatusOK {
				t.Errorf("readyz: %d %s", r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	// 100 probes: the cached answer, or one fresh check if a second passed.
	if got := trips.take(); got > 2 {
		t.Fatalf("%d round trips to PostgreSQL for 100 probes, want at most 2", got)
	}
}

// TestEtcdDownIsUnavailable: with etcd unreachable a gateway that has not
// loaded the keys that tell an issued token from a forged one refuses with
// 503 and writes nothing.
func TestEtcdDownIsUnavailable(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	l := h.mustAcquire("account/acct-62", 60, 0) // outlives the etcd-down calls on a busy machine
	defer h.release(l)
	dead, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dead.Close() })
	var dbURL string
	if err := h.pool.QueryRow(t.Context(), "SELECT 'postgres://postgres@' || inet_server_addr() || ':' || inet_server_port() || '/' || current_database() || '?sslmode=disable'").Scan(&dbURL); err != nil {
		t.Fatal(err)
	}
	_, base := gatewayWith(t, dbURL, dead)
	blind := &harness{t: t, base: base}
	before := h.state()
	r := blind.write("debit", l.Token, debit("acct-62", 1))
	if r.Status != http.StatusServiceUnavailable || r.Problem.Kind() != "unavailable" {
		t.Fatalf("write with etcd down: %d %s, want 503 unavailable", r.Status, r.Body)
	}
	if after := h.state(); after != before {
		t.Fatalf("refused write changed state: %s -> %s", before, after)
	}
	// Lease calls answer too, with 503 and Retry-After, instead of hanging
	// for as long as their client waits (a client of the HTTP API sets no
	// timeout here: a hang would end the test by its own deadline).
	var wg sync.WaitGroup
	for _, call := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/leases", `{"resource": "account/acct-62", "ttl": 5}`},
		{http.MethodPost, "/v1/leases/" + l.ID + "/keepalive", ""},
		{http.MethodGet, "/v1/leases?resource=account/acct-62", ""},
		{http.MethodDelete, "/v1/leases/" + l.ID, ""},
	} {
		wg.Go(func() {
			r := blind.do(call.method, call.path, http.Header{"Content-Type": {"application/json"}}, call.body)
			if r.Status != http.StatusServiceUnavailable || r.Problem.Kind() != "unavailable" || r.Header.Get("Retry-After") == "" {
				t.Errorf("%s %s with etcd down: %d %s, want 503 unavailable with Retry-After", call.method, call.path, r.Status, r.Body)
			}
		})
	}
	wg.Wait()
}

// TestHeadWhereGetIsServed: HEAD is answered wherever GET is (a load
// balancer's HEAD /readyz), like GET without the body; on a route that
// only takes POST it is refused with 405, as any other method is.
func TestHeadWhereGetIsServed(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	before := h.state()
	for _, path := range []string{"/livez", "/readyz", "/status", "/v1/openapi.json"} {
		get := h.do(http.MethodGet, path, nil, "")
		head := h.do(http.MethodHead, path, nil, "")
		if get.Status != http.StatusOK || head.Status != http.StatusOK || len(head.Body) != 0 ||
			head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("%s: GET %d (%s), HEAD %d (%s) with %d bytes of body; want both 200, the same type, HEAD without a body",
				path, get.Status, get.Header.Get("Content-Type"), head.Status, head.Header.Get("Content-Type"), len(head.Body))
		}
	}
	if r := h.do(http.MethodHead, "/v1/ops/debit", nil, ""); r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "POST" {
		t.Errorf("HEAD /v1/ops/debit: %d, Allow %q; want 405, Allow POST", r.Status, r.Header.Get("Allow"))
	}
	if h.state() != before {
		t.Error("a HEAD changed the database")
	}
}

// TestMethodsNoRouteServes: a method the router has no route for at all
// (PROPFIND, a made-up one) is 404 on a path nothing serves, and 405 with
// the path's methods in Allow where something does; nothing is written.
func TestMethodsNoRouteServes(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	before := h.state()
	for _, c := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"PROPFIND", "/nowhere", http.StatusNotFound, ""},
		{"FOO", "/v1/nowhere", http.StatusNotFound, ""},
		{"PROPFIND", "/v1/ops/debit", http.StatusMethodNotAllowed, "POST"},
		{"FOO", "/livez", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodPut, "/v1/leases", http.StatusMethodNotAllowed, "GET, HEAD, POST"},
		// A browser's CORS preflight: refused, granting nothing.
		{http.MethodOptions, "/v1/ops/debit", http.StatusMethodNotAllowed, "POST"},
	} {
		r := h.do(c.method, c.path, http.Header{"Origin": {"https://elsewhere.example"}, "Access-Control-Request-Method": {"POST"}}, "")
		if r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s %s granted a cross-origin request: %v", c.method, c.path, r.Header)
		}
		if r.Status != c.status || r.Header.Get("Allow") != c.allow || r.Problem.Status != c.status {
			t.Errorf("%s %s: %d, Allow %q, problem %+v; want %d, Allow %q", c.method, c.path, r.Status, r.Header.Get("Allow"), r.Problem, c.status, c.allow)
		}
	}
	if h.state() != before {
		t.Error("a refused method changed the database")
	}
}

// TestEscapedPathsRouteNormalized: an escaped unreserved character routes
// as itself (RFC 3986 §6.2.2.2), as the admission gate reads it:
// /v1/ops/deb%69t is debit; an escaped slash stays inside its segment.
func TestEscapedPathsRouteNormalized(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	l := h.mustAcquire("account/acct-50", 5, 0)
	defer h.release(l)
	before := h.balance("acct-50")
	for _, op := range []string{"deb%69t", "%64ebit"} {
		if r := h.do(http.MethodPost, "/v1/ops/"+op, tok(l.Token), debit("acct-50", 1)); r.Status != http.StatusOK {
			t.Fatalf("POST /v1/ops/%s: %d %s, want the debit applied", op, r.Status, r.Body)
		}
	}
	if got := h.balance("acct-50"); got != before-2 {
		t.Fatalf("balance moved by %d, want -2", got-before)
	}
	state := h.state()
	if r := h.do(http.MethodPost, "/v1/ops/de%2Fbit", tok(l.Token), debit("acct-50", 1)); r.Status != http.StatusNotFound {
		t.Fatalf("POST /v1/ops/de%%2Fbit: %d %s, want 404", r.Status, r.Body)
	}
	if h.state() != state {
		t.Fatal("a refused write changed the database")
	}
}

package gateway_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/testgw"
	"github.com/fencegw/fencegw/node"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/schema"
	"github.com/fencegw/fencegw/tokens"
)

// harness is one gateway on a fresh database (gateway schema and the demo
// application migrated) and the package's shared etcd, with its node
// recording refusals: a test runs the node's other loops it needs.
type harness struct {
	t    *testing.T
	base string
	pool *pgxpool.Pool
	auth *authority.Etcd
	gw   *gateway.Gateway
	node *node.Node
	// policy is the YAML the gateway serves; gateways on other pools
	// (wrappedGateway) serve it too.
	policy string
	// client sends the requests; nil: http.DefaultClient.
	client *http.Client
}

// demoPolicy returns the demo policy text with the account resource in the
// given compare mode.
func demoPolicy(t testing.TB, compare string) string {
	t.Helper()
	src, err := os.ReadFile("../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(string(src), "compare: monotonic", "compare: "+compare, 1)
}

func newHarness(t *testing.T, policyYAML string) *harness {
	t.Helper()
	return newHarnessOn(t, policyYAML, testenv.EtcdClient(t))
}

// newHarnessOn is newHarness with the gateway's etcd client given.
func newHarnessOn(t *testing.T, policyYAML string, cli *clientv3.Client) *harness {
	t.Helper()
	dbURL := testenv.NewDatabase(t)
	if err := schema.Up(dbURL, schema.Gateway(), schema.Dir("../testdata/demo/migrations", "demo_schema_migrations")); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse("test-policy.yaml", []byte(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	pool, err := fence.NewPool(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	auth := authority.NewEtcd(cli, testenv.KEK())
	version, err := schema.Latest(schema.Gateway())
	if err != nil {
		t.Fatal(err)
	}
	cfg := gateway.Config{
		Pool: pool, Authority: auth, Policy: pol, SchemaVersion: version, MaxBodyBytes: 4096,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
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
	return &harness{t: t, base: srv.URL, pool: pool, auth: auth, gw: gw, node: nd, policy: policyYAML}
}

// sibling is another gateway on h's pool, authority and policy, its Config
// changed by tweaks: a second replica, or one set up for a test.
func (h *harness) sibling(tweaks ...func(*gateway.Config)) *harness {
	return h.onPool(h.pool, tweaks...)
}

// onPool is a sibling writing through pool; the harness still reads the
// database through h's pool.
func (h *harness) onPool(pool *pgxpool.Pool, tweaks ...func(*gateway.Config)) *harness {
	h.t.Helper()
	gw, nd, base := gatewayWithPool(h.t, pool, h.auth, h.policy, tweaks...)
	return &harness{t: h.t, base: base, pool: h.pool, auth: h.auth, gw: gw, node: nd, policy: h.policy}
}

// store is a fence.Store on h's database, for a test's own call of a
// step of the node's loops.
func (h *harness) store() *fence.Store {
	h.t.Helper()
	s, err := fence.New(fence.Config{Pool: h.pool})
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// response is an HTTP answer with its body decoded loosely.
type response struct {
	Status  int
	Header  http.Header
	Body    []byte
	Problem gateway.Problem
	Result  gateway.Result
}

func (h *harness) do(method, path string, header http.Header, body string) response {
	h.t.Helper()
	return h.send(method, path, header, strings.NewReader(body))
}

// send is do with any body: one whose length the client cannot know (not
// a *strings.Reader or the like) goes out chunked, without Content-Length.
func (h *harness) send(method, path string, header http.Header, body io.Reader) response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.base+path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	if body != nil && header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json") // as every client of a JSON API does
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := cmp.Or(h.client, http.DefaultClient).Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	r := response{Status: resp.StatusCode, Header: resp.Header}
	if r.Body, err = io.ReadAll(resp.Body); err != nil {
		h.t.Fatal(err)
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case ct == "application/problem+json":
		_ = json.Unmarshal(r.Body, &r.Problem)
	case resp.StatusCode == http.StatusOK && strings.HasPrefix(path, "/v1/ops/"):
		_ = json.Unmarshal(r.Body, &r.Result)
	}
	return r
}

// write sends a fenced write; token "" sends no Fencing-Token header.
func (h *harness) write(op, token, body string) response {
	h.t.Helper()
	hdr := http.Header{}
	if token != "" {
		hdr.Set(gateway.TokenHeader, token)
	}
	return h.do(http.MethodPost, "/v1/ops/"+op, hdr, body)
}

type lease struct {
	ID, Resource, Token string
	// Plain is the token without its signature: how the fence, the logs
	// and problem documents show it.
	Plain string
	TTL   int64
}

// plain is a token's text without its signature.
func plain(t *testing.T, token string) string {
	t.Helper()
	return mustToken(t, token).Unsigned().String()
}

func (h *harness) acquire(resource string, ttl int, wait float64) (lease, response) {
	h.t.Helper()
	r := h.do(http.MethodPost, "/v1/leases", nil, fmt.Sprintf(`{"resource": %q, "ttl": %d, "wait": %g}`, resource, ttl, wait))
	var l struct {
		LeaseID  string `json:"lease_id"`
		Resource string `json:"resource"`
		Token    string `json:"token"`
		TTL      int64  `json:"ttl"`
	}
	if r.Status == http.StatusCreated {
		if err := json.Unmarshal(r.Body, &l); err != nil {
			h.t.Fatal(err)
		}
	}
	out := lease{ID: l.LeaseID, Resource: l.Resource, Token: l.Token, TTL: l.TTL}
	if l.Token != "" {
		out.Plain = plain(h.t, l.Token)
	}
	return out, r
}

func (h *harness) mustAcquire(resource string, ttl int, wait float64) lease {
	h.t.Helper()
	l, r := h.acquire(resource, ttl, wait)
	if r.Status != http.StatusCreated {
		h.t.Fatalf("acquire %s: %d %s", resource, r.Status, r.Body)
	}
	return l
}

// succession takes a lease on resource, lets it go and takes the next,
// held until the caller releases it: old's token is stale once cur's has
// written.
func (h *harness) succession(resource string, ttl int) (old, cur lease) {
	h.t.Helper()
	old = h.mustAcquire(resource, ttl, 0)
	h.release(old)
	return old, h.mustAcquire(resource, ttl, 0)
}

func (h *harness) release(l lease) {
	h.t.Helper()
	if r := h.do(http.MethodDelete, "/v1/leases/"+l.ID, nil, ""); r.Status != http.StatusNoContent {
		h.t.Fatalf("release %s: %d %s", l.ID, r.Status, r.Body)
	}
}

func (h *harness) balance(account string) int64 {
	h.t.Helper()
	var b int64
	if err := h.pool.QueryRow(context.Background(), "SELECT balance_cents FROM demo.accounts WHERE id = $1", account).Scan(&b); err != nil {
		h.t.Fatal(err)
	}
	return b
}

func (h *harness) fence(resource string) string {
	h.t.Helper()
	var f string
	err := h.pool.QueryRow(context.Background(),
		"SELECT coalesce((SELECT epoch || ':' || revision FROM fencegw.fences WHERE resource = $1), 'none')", resource).Scan(&f)
	if err != nil {
		h.t.Fatal(err)
	}
	return f
}

// state digests every business table and the fences, so a test can prove a
// refused request changed nothing at all.
func (h *harness) state() string {
	h.t.Helper()
	var s string
	err := h.pool.QueryRow(context.Background(), `SELECT
		(SELECT md5(string_agg(id || '=' || balance_cents, ',' ORDER BY id)) FROM demo.accounts) || ' ' ||
		(SELECT count(*) || '/' || coalesce(max(id), 0) FROM demo.write_log) || ' ' ||
		(SELECT coalesce(md5(string_agg(resource || '=' || epoch || ':' || revision || '#' || writes, ',' ORDER BY resource)), 'none') FROM fencegw.fences)`).Scan(&s)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// debit is a request body for the demo's debit and credit operations.
func debit(account string, cents int) string {
	return fmt.Sprintf(`{"account": %q, "amount_cents": %d}`, account, cents)
}

func mustToken(t *testing.T, s string) tokens.Token {
	t.Helper()
	tok, err := tokens.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func decodeJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

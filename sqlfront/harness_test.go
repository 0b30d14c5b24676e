package sqlfront_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/testgw"
	"github.com/fencegw/fencegw/sqlfront"
	"github.com/fencegw/fencegw/tokens"
)

// The clients of the test policy: two of the front, under one role, and
// one of HTTP alone.
const (
	billing = "billing"
	ledger  = "ledger"
	ops     = "ops"
)

// front is a gateway and its SQL front, on a fresh database with the
// demo application, its guard installed, and a role for the front's
// clients with grants on the demo's tables.
type front struct {
	t    testing.TB
	gw   *testgw.Gateway
	auth *authority.Etcd
	srv  *sqlfront.Server
	addr string // the front's host:port
	db   string
	role string
	keys map[string]string // client -> bearer key
	log  *testenv.Buffer
}

func newFront(t testing.TB, adjust ...func(*sqlfront.Config)) *front {
	t.Helper()
	f := &front{t: t, role: "app_front_" + randomHex(6), keys: map[string]string{}, log: &testenv.Buffer{}}
	for _, c := range []string{billing, ledger, ops} {
		f.keys[c] = randomHex(24)
	}
	src, err := os.ReadFile("../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol := string(src) + fmt.Sprintf(`
clients:
  %s: {token_sha256: %q, certificate: {cn: billing}, sql_role: %s, sql_resources: [account]}
  %s: {token_sha256: %q, sql_role: %s, sql_resources: [account]}
  %s: {token_sha256: %q, operations: ["*"]}
`, billing, sum(f.keys[billing]), f.role, ledger, sum(f.keys[ledger]), f.role, ops, sum(f.keys[ops]))
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	f.gw = testgw.Start(t, testgw.Options{Policy: path, Migrations: "../testdata/demo/migrations", MigrationsTable: "demo_schema_migrations",
		Guard: true, Config: func(c *gateway.Config) { f.auth = c.Authority }})
	f.admin(
		"CREATE ROLE "+f.role+" LOGIN",
		"GRANT USAGE ON SCHEMA demo, fencegw TO "+f.role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA demo TO "+f.role,
		"GRANT USAGE ON ALL SEQUENCES IN SCHEMA demo TO "+f.role,
	)
	t.Cleanup(func() {
		_, _ = f.gw.Pool.Exec(context.Background(), "DROP OWNED BY "+f.role+"; DROP ROLE "+f.role)
	})
	backend, err := pgconn.ParseConfig(f.gw.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	f.db = backend.Database
	// As serve runs the front: a COMMIT looks its holders up in the view.
	holders := f.auth.ViewHolders()
	t.Cleanup(holders.Stop)
	cfg := sqlfront.Config{Policy: f.gw.Policy, Authority: f.auth, Pool: f.gw.Pool, Backend: backend, Audit: f.gw.Node.Audit,
		Logger: slog.New(slog.NewTextHandler(f.log, nil)), Holders: holders}
	for _, a := range adjust {
		a(&cfg)
	}
	if f.srv, err = sqlfront.New(cfg); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- f.srv.Serve(ln) }()
	t.Cleanup(func() {
		f.srv.Close()
		if err := <-served; !errors.Is(err, sqlfront.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return f
}

// admin runs statements as the database's owner.
func (f *front) admin(statements ...string) {
	f.t.Helper()
	for _, s := range statements {
		if _, err := f.gw.Pool.Exec(context.Background(), s); err != nil {
			f.t.Fatalf("%s: %v", s, err)
		}
	}
}

// url is the front's URL for client, its bearer key the password.
func (f *front) url(client string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(client, f.keys[client]), Host: f.addr, Path: "/" + f.db, RawQuery: "sslmode=disable"}
	return u.String()
}

// connect connects to the front as client with pgx.
func (f *front) connect(client string) *pgx.Conn {
	f.t.Helper()
	conn, err := pgx.Connect(context.Background(), f.url(client))
	if err != nil {
		f.t.Fatalf("connect as %s: %v", client, err)
	}
	f.t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// lease is a lease granted over HTTP.
type lease struct{ ID, Token string }

// lease takes a lease on resource for client, waiting up to wait seconds.
func (f *front) lease(client, resource string, ttl int, wait float64) lease {
	f.t.Helper()
	body := fmt.Sprintf(`{"resource": %q, "ttl": %d, "wait": %g}`, resource, ttl, wait)
	status, out := f.http(client, http.MethodPost, "/v1/leases", body)
	if status != http.StatusCreated {
		f.t.Fatalf("lease %s for %s: %d %s", resource, client, status, out)
	}
	var l struct {
		LeaseID string `json:"lease_id"`
		Token   string `json:"token"`
	}
	if err := json.Unmarshal(out, &l); err != nil {
		f.t.Fatal(err)
	}
	// Let go at the end, so that a test run again finds the lock free.
	f.t.Cleanup(func() { f.http(client, http.MethodDelete, "/v1/leases/"+l.LeaseID, "") })
	return lease{ID: l.LeaseID, Token: l.Token}
}

func (f *front) release(client string, l lease) {
	f.t.Helper()
	if status, out := f.http(client, http.MethodDelete, "/v1/leases/"+l.ID, ""); status != http.StatusNoContent {
		f.t.Fatalf("release %s: %d %s", l.ID, status, out)
	}
}

func (f *front) http(client, method, path, body string) (int, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.gw.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.keys[client])
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// state is what the demo's tables hold for account: its balance and its
// write log, every row.
func (f *front) state(account string) string {
	f.t.Helper()
	var balance int64
	var log string
	err := f.gw.Pool.QueryRow(context.Background(), `SELECT a.balance_cents,
		coalesce((SELECT string_agg(w.epoch || ':' || w.revision || ' ' || w.operation || ' ' || w.amount_cents, ', ' ORDER BY w.id)
		            FROM demo.write_log w WHERE w.account = a.id), '')
		FROM demo.accounts a WHERE a.id = $1`, account).Scan(&balance, &log)
	if err != nil {
		f.t.Fatal(err)
	}
	return fmt.Sprintf("balance %d, log [%s]", balance, log)
}

// sqlState is err's SQLSTATE, "" for none.
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	if err != nil {
		return "not a PostgreSQL error: " + err.Error()
	}
	return ""
}

func sum(key string) string {
	s := sha256.Sum256([]byte(key))
	return hex.EncodeToString(s[:])
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// unsigned is a token's text without its signature.
func unsigned(t *testing.T, token string) string {
	t.Helper()
	tok, err := tokens.Parse(token)
	if err != nil {
		t.Fatal(err)
	}
	return tok.Unsigned().String()
}

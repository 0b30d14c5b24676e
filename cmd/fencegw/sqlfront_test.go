package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// frontDebit takes a lease on account with key over HTTP (base), and
// debits 100 through the SQL front at frontURL in a fenced transaction.
func frontDebit(t *testing.T, base, key, frontURL, account string) {
	t.Helper()
	ctx := context.Background()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/leases", strings.NewReader(`{"resource": "account/`+account+`", "ttl": 30}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var lease struct{ Token string }
	err = json.NewDecoder(resp.Body).Decode(&lease)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("lease: %d %v", resp.StatusCode, err)
	}
	conn, err := pgx.Connect(ctx, frontURL)
	if err != nil {
		t.Fatalf("connect to the SQL front: %v", err)
	}
	defer conn.Close(ctx)
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL fencegw.tokens = 'account/"+account+"="+lease.Token+"'"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "UPDATE demo.accounts SET balance_cents = balance_cents - 100 WHERE id = $1", account)
		return err
	})
	if err != nil {
		t.Fatalf("a fenced debit through the SQL front: %v", err)
	}
}

// TestDevSQLFront: dev --pg-listen prints the SQL front's URL for a
// client of its own and the key the HTTP API now asks for; a fenced
// transaction through it debits the demo's account.
func TestDevSQLFront(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	found, stop := startDevFor(t, []*regexp.Regexp{
		regexp.MustCompile(`gateway\s+(http://\S+)`), regexp.MustCompile(`DATABASE_URL\s+(\S+)`),
		regexp.MustCompile(`psql '(postgres://\S+)'`), regexp.MustCompile(`Authorization: Bearer (\w+)`),
	}, "--pg-listen", "127.0.0.1:0")
	defer stop()
	base, dbURL, frontURL, key := found[0], found[1], found[2], found[3]
	frontDebit(t, base, key, frontURL, "acct-7")
	if got := balance(t, dbURL, "acct-7"); got != 900 {
		t.Fatalf("balance %d, want 900", got)
	}
	if err := stop(); err != nil {
		t.Fatalf("dev stopped with %v", err)
	}
}

// frontClient makes a role of its own on dbURL for the SQL front's client
// app, writes the demo policy with app in it, and installs the guard: it
// returns the policy's path and app's key.
func frontClient(t *testing.T, dbURL string) (policyPath, key string) {
	t.Helper()
	ctx := context.Background()
	role := "app_serve_" + strings.ReplaceAll(filepath.Base(t.TempDir()), "-", "_")
	key = "serve-front-key-" + role
	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP OWNED BY "+role+"; DROP ROLE "+role)
		admin.Close(context.Background())
	})
	for _, s := range []string{"CREATE ROLE " + role + " LOGIN", "GRANT USAGE ON SCHEMA demo, fencegw TO " + role,
		"GRANT SELECT, UPDATE ON demo.accounts TO " + role} {
		if _, err := admin.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	src, err := os.ReadFile("../../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(key))
	policyPath = filepath.Join(t.TempDir(), "policy.yaml")
	pol := string(src) + fmt.Sprintf("clients:\n  app: {token_sha256: %s, sql_role: %s, sql_resources: [account]}\n", hex.EncodeToString(sum[:]), role)
	if err := os.WriteFile(policyPath, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := execute(ctx, io.Discard, "guard", "--database-url", dbURL, "--policy", policyPath, "install"); err != nil {
		t.Fatal(err)
	}
	return policyPath, key
}

// frontURL is the URL of the SQL front at addr for app, whose key is key,
// to dbURL's database.
func frontURL(t *testing.T, dbURL, addr, key string) string {
	t.Helper()
	pc, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("postgres://app:%s@%s/%s?sslmode=disable", key, addr, pc.Database)
}

// TestServeSQLFront: serve --pg-listen serves the policy's clients of the
// SQL front as their sql_role, and its shutdown ends their sessions.
func TestServeSQLFront(t *testing.T) {
	dbURL := migrated(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path, key := frontClient(t, dbURL)
	cfg := serveConfigFor(t, dbURL, path)
	cfg.SQLFront = sqlFrontFlags{Listen: "127.0.0.1:0", MaxConnections: 10}
	fronts, addrs, done := make(chan string, 1), make(chan string, 1), make(chan error, 1)
	cfg.frontBound = func(addr string) { fronts <- addr }
	go func() { done <- serve(ctx, cfg, func(addr string) { addrs <- addr }) }()
	var base string
	select {
	case base = <-addrs:
	case err := <-done:
		t.Fatalf("serve stopped: %v", err)
	}
	front := frontURL(t, dbURL, <-fronts, key)
	frontDebit(t, "http://"+base, key, front, "acct-8")
	if got := balance(t, dbURL, "acct-8"); got != 900 {
		t.Fatalf("balance %d, want 900", got)
	}
	open, err := pgx.Connect(ctx, front)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close(context.Background())
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve after cancel: %v", err)
	}
	if _, err := open.Exec(context.Background(), "SELECT 1"); err == nil {
		t.Fatal("a session of the SQL front outlived serve")
	}
}

// TestServeSQLFrontGateMetrics: the SQL front's admission gate is on the
// ops listener's /metrics, as the HTTP path's is: a statement that waited
// for a turn while a transaction held the only one, and was refused
// (53000), is counted, waited and refused; the turn held is in flight
// until its transaction ends.
func TestServeSQLFrontGateMetrics(t *testing.T) {
	dbURL := migrated(t)
	ctx := context.Background()
	path, key := frontClient(t, dbURL)
	cfg := serveConfigFor(t, dbURL, path)
	cfg.SQLFront = sqlFrontFlags{Listen: "127.0.0.1:0", MaxConnections: 10, MaxTransactions: 1, QueueTimeout: 50 * time.Millisecond}
	cfg.TLS.OpsListen = "127.0.0.1:0"
	fronts, ops := make(chan string, 1), make(chan string, 1)
	cfg.frontBound = func(addr string) { fronts <- addr }
	cfg.TLS.opsBound = func(addr string) { ops <- addr }
	runServe(t, cfg)
	front, metrics := frontURL(t, dbURL, <-fronts, key), "http://"+<-ops+"/metrics"
	if m := scrape(t, http.DefaultClient, metrics); !strings.Contains(m, "fencegw_sql_transactions_in_flight 0") || !strings.Contains(m, "fencegw_sql_admission_refused_total 0") {
		t.Fatalf("before any transaction, /metrics has no gate of the front at 0:\n%s", grepLines(m, "fencegw_sql_"))
	}

	holder, err := pgx.Connect(ctx, front)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1"); err != nil { // the transaction holds the only turn
		t.Fatal(err)
	}
	waiter, err := pgx.Connect(ctx, front)
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close(ctx)
	var pgErr *pgconn.PgError
	if _, err := waiter.Exec(ctx, "SELECT 1"); !errors.As(err, &pgErr) || pgErr.Code != pgerrcode.InsufficientResources {
		t.Fatalf("a statement while the only turn is held: %v; want 53000", err)
	}
	m := scrape(t, http.DefaultClient, metrics)
	for _, want := range []string{"fencegw_sql_transactions_in_flight 1", "fencegw_sql_transactions_waiting 0",
		"fencegw_sql_admission_wait_seconds_count 1", "fencegw_sql_admission_refused_total 1"} {
		if !strings.Contains(m, want) {
			t.Errorf("after a refusal, /metrics has no %q:\n%s", want, grepLines(m, "fencegw_sql_"))
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(30*time.Second, func() bool {
		return strings.Contains(scrape(t, http.DefaultClient, metrics), "fencegw_sql_transactions_in_flight 0")
	}) {
		t.Fatal("the turn is still in flight after its transaction committed")
	}
}

// grepLines are the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
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

// TestServeSQLFront: serve --pg-listen serves the policy's clients of the
// SQL front as their sql_role, and its shutdown ends their sessions.
func TestServeSQLFront(t *testing.T) {
	dbURL := migrated(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	role := "app_serve_" + strings.ReplaceAll(filepath.Base(t.TempDir()), "-", "_")
	key := "serve-front-key-" + role
	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, s := range []string{"CREATE ROLE " + role + " LOGIN", "GRANT USAGE ON SCHEMA demo, fencegw TO " + role,
		"GRANT SELECT, UPDATE ON demo.accounts TO " + role} {
		if _, err := admin.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP OWNED BY "+role+"; DROP ROLE "+role) })
	src, err := os.ReadFile("../../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(key))
	path := filepath.Join(t.TempDir(), "policy.yaml")
	pol := string(src) + fmt.Sprintf("clients:\n  app: {token_sha256: %s, sql_role: %s, sql_resources: [account]}\n", hex.EncodeToString(sum[:]), role)
	if err := os.WriteFile(path, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := execute(ctx, io.Discard, "guard", "--database-url", dbURL, "--policy", path, "install"); err != nil {
		t.Fatal(err)
	}
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
	front := <-fronts
	pc, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	frontURL := fmt.Sprintf("postgres://app:%s@%s/%s?sslmode=disable", key, front, pc.Database)
	frontDebit(t, "http://"+base, key, frontURL, "acct-8")
	if got := balance(t, dbURL, "acct-8"); got != 900 {
		t.Fatalf("balance %d, want 900", got)
	}
	open, err := pgx.Connect(ctx, frontURL)
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

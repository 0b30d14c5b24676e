package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestDevRunsTheDemoAndCleansUp runs the README's first command in-process:
// a lease and a debit work against the printed address, and cancelling
// (Ctrl-C) stops the throwaway PostgreSQL.
func TestDevRunsTheDemoAndCleansUp(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- runDev(ctx, []string{"--listen", "127.0.0.1:0", "--demo", "../../testdata/demo"}, pw)
		pw.Close()
	}()

	gatewayRE := regexp.MustCompile(`gateway\s+(http://\S+)`)
	dbRE := regexp.MustCompile(`DATABASE_URL\s+(\S+)`)
	var base, dbURL string
	sc := bufio.NewScanner(pr)
	for base == "" || dbURL == "" {
		if !sc.Scan() {
			t.Fatalf("dev exited before printing its cheat-sheet: %v", <-done)
		}
		if m := gatewayRE.FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
		}
		if m := dbRE.FindStringSubmatch(sc.Text()); m != nil {
			dbURL = m[1]
		}
	}
	go io.Copy(io.Discard, pr)

	resp, err := http.Post(base+"/v1/leases", "application/json", strings.NewReader(`{"resource": "account/acct-7", "ttl": 5}`))
	if err != nil {
		t.Fatal(err)
	}
	var lease struct{ Token string }
	json.NewDecoder(resp.Body).Decode(&lease)
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/ops/debit", strings.NewReader(`{"account": "acct-7", "amount_cents": 100}`))
	req.Header.Set("Fencing-Token", lease.Token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("demo debit: %d", resp.StatusCode)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	var balance int
	err = conn.QueryRow(ctx, "SELECT balance_cents FROM demo.accounts WHERE id = 'acct-7'").Scan(&balance)
	conn.Close(ctx)
	if err != nil || balance != 900 {
		t.Fatalf("balance = %d, %v; want 900", balance, err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("dev returned %v after Ctrl-C", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("dev did not stop within 30s of Ctrl-C")
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer ccancel()
	if c, err := pgx.Connect(cctx, dbURL); err == nil {
		c.Close(cctx)
		t.Fatal("the throwaway PostgreSQL still accepts connections after dev stopped")
	}
}

func TestPolicyCheck(t *testing.T) {
	if err := runPolicy([]string{"check", "../../testdata/demo/policy.yaml"}); err != nil {
		t.Fatalf("policy check demo: %v", err)
	}
	err := runPolicy([]string{"check", "../../testdata/policies/broken.yaml"})
	if err == nil || !strings.Contains(err.Error(), "operations.debit.statements[0].sql") {
		t.Fatalf("policy check broken.yaml = %v, want a problem naming the statement", err)
	}
	if err := runPolicy([]string{"lint"}); !errors.Is(err, errUsage) {
		t.Fatalf("policy lint = %v, want usage error", err)
	}
}

func TestMigrateVerbs(t *testing.T) {
	tests := []struct {
		args []string
		ok   bool
	}{
		{[]string{"up"}, true},
		{[]string{"version"}, true},
		{[]string{"down", "1"}, true},
		{[]string{"force", "0"}, true},
		{[]string{}, false},
		{[]string{"down"}, false},
		{[]string{"down", "0"}, false},
		{[]string{"down", "-1"}, false},
		{[]string{"force", "x"}, false},
		{[]string{"up", "now"}, false},
		{[]string{"sideways"}, false},
	}
	for _, tt := range tests {
		_, _, err := migrateVerb(tt.args)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, errUsage)) {
			t.Errorf("migrateVerb(%q) = %v, want ok=%t", tt.args, err, tt.ok)
		}
	}
}

func TestServeConfigErrors(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("FENCEGW_DATABASE_URL", "")
	if err := runServe(context.Background(), []string{"--policy", "p.yaml"}); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Fatalf("serve without a database = %v, want a usage error naming DATABASE_URL", err)
	}
	if err := runServe(context.Background(), []string{"--database-url", "postgres://x/y"}); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "policy") {
		t.Fatalf("serve without a policy = %v, want a usage error naming the policy", err)
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// startDev runs `fencegw dev` in-process and returns the printed gateway
// address and DATABASE_URL, and a stop function (Ctrl-C) that returns
// runDev's result.
func startDev(t *testing.T, extra ...string) (base, dbURL string, stop func() error) {
	t.Helper()
	found, stop := startDevFor(t, []*regexp.Regexp{regexp.MustCompile(`gateway\s+(http://\S+)`), regexp.MustCompile(`DATABASE_URL\s+(\S+)`)}, extra...)
	return found[0], found[1], stop
}

// startDevFor runs `fencegw dev` in-process until it has printed a line
// matching each of want, and returns each one's first submatch, and a
// stop function (Ctrl-C) that returns runDev's result.
func startDevFor(t *testing.T, want []*regexp.Regexp, extra ...string) (found []string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- execute(ctx, pw, append([]string{"dev", "--listen", "127.0.0.1:0", "--demo", "../../testdata/demo"}, extra...)...)
		pw.Close()
	}()
	found = make([]string, len(want))
	sc := bufio.NewScanner(pr)
	for slices.Contains(found, "") {
		if !sc.Scan() {
			cancel()
			t.Fatalf("dev exited before printing its cheat-sheet: %v", <-done)
		}
		for i, re := range want {
			if m := re.FindStringSubmatch(sc.Text()); m != nil && found[i] == "" {
				found[i] = m[1]
			}
		}
	}
	go io.Copy(io.Discard, pr)
	return found, func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return errors.New("dev did not stop within 30s of Ctrl-C")
		}
	}
}

// demoDebit takes a lease on account and debits 100 through base.
func demoDebit(t *testing.T, base, account string) {
	t.Helper()
	resp, err := http.Post(base+"/v1/leases", "application/json", strings.NewReader(`{"resource": "account/`+account+`", "ttl": 5}`))
	if err != nil {
		t.Fatal(err)
	}
	var lease struct{ Token string }
	json.NewDecoder(resp.Body).Decode(&lease)
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/ops/debit", strings.NewReader(`{"account": "`+account+`", "amount_cents": 100}`))
	req.Header.Set("Fencing-Token", lease.Token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("demo debit with %q: %d", lease.Token, resp.StatusCode)
	}
}

func balance(t *testing.T, dbURL, account string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var b int
	if err := conn.QueryRow(context.Background(), "SELECT balance_cents FROM demo.accounts WHERE id = $1", account).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDevRunsTheDemoAndCleansUp runs the README's first command in-process,
// with nothing in the environment (dev makes its own KEK): a lease and a
// debit work against the printed address, and cancelling (Ctrl-C) stops
// the throwaway PostgreSQL.
func TestDevRunsTheDemoAndCleansUp(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("FENCEGW_TOKEN_KEK_FILE", "")
	base, dbURL, stop := startDev(t)
	demoDebit(t, base, "acct-7")
	if got := balance(t, dbURL, "acct-7"); got != 900 {
		t.Fatalf("balance = %d, want 900", got)
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(context.Background(), "UPDATE demo.accounts SET balance_cents = 0 WHERE id = 'acct-7'")
	conn.Close(context.Background())
	if err == nil || !strings.Contains(err.Error(), "FG403") {
		t.Fatalf("a direct write to the demo's tables: %v, want the guard's FG403", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("dev after Ctrl-C: %v", err)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer ccancel()
	if c, err := pgx.Connect(cctx, dbURL); err == nil {
		c.Close(cctx)
		t.Fatal("the throwaway PostgreSQL still accepts connections after dev stopped")
	}
}

// TestDevTwiceOnOneDatabase: with DATABASE_URL kept between runs, each run's
// new embedded etcd is another cluster to the database. dev refuses to
// start unless told to adopt it, and then starts a new epoch.
func TestDevTwiceOnOneDatabase(t *testing.T) {
	t.Setenv("DATABASE_URL", testenv.NewDatabase(t))
	base, _, stop := startDev(t)
	demoDebit(t, base, "acct-8")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	err := execute(context.Background(), io.Discard, "dev", "--listen", "127.0.0.1:0", "--demo", "../../testdata/demo")
	if err == nil || !strings.Contains(err.Error(), "--adopt-etcd") {
		t.Fatalf("second dev run without --adopt-etcd = %v, want a refusal naming the flag", err)
	}
	for run := 2; run <= 3; run++ {
		base, dbURL, stop := startDev(t, "--adopt-etcd")
		demoDebit(t, base, "acct-8")
		if got := balance(t, dbURL, "acct-8"); got != 1000-100*run {
			t.Fatalf("run %d: balance = %d, want %d", run, got, 1000-100*run)
		}
		if err := stop(); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}
}

func TestPolicyCheck(t *testing.T) {
	if err := execute(context.Background(), io.Discard, "policy", "check", "../../testdata/demo/policy.yaml"); err != nil {
		t.Fatalf("policy check demo: %v", err)
	}
	err := execute(context.Background(), io.Discard, "policy", "check", "../../testdata/policies/broken.yaml")
	if err == nil || !strings.Contains(err.Error(), "operations.debit.statements[0].sql") {
		t.Fatalf("policy check broken.yaml = %v, want a problem naming the statement", err)
	}
	if err := execute(context.Background(), io.Discard, "policy", "lint"); !errors.Is(err, errUsage) {
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
		{[]string{"force", "1", "2"}, false},
	}
	for _, tt := range tests {
		// Nothing listens there: a command line that passes gets as far
		// as connecting, and fails there, not as a usage error.
		args := append([]string{"migrate", "--database-url", "postgres://127.0.0.1:1/x?connect_timeout=1"}, tt.args...)
		err := execute(t.Context(), io.Discard, args...)
		if err == nil || errors.Is(err, errUsage) == tt.ok {
			t.Errorf("migrate %q = %v, want ok=%t", tt.args, err, tt.ok)
		}
	}
}

func TestServeConfigErrors(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("FENCEGW_DATABASE_URL", "")
	if err := execute(context.Background(), io.Discard, "serve", "--policy", "p.yaml"); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Fatalf("serve without a database = %v, want a usage error naming DATABASE_URL", err)
	}
	if err := execute(context.Background(), io.Discard, "serve", "--database-url", "postgres://x/y"); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "policy") {
		t.Fatalf("serve without a policy = %v, want a usage error naming the policy", err)
	}
}

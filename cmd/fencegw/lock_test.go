package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// writerEnv switches the test binary into the command `fencegw lock` runs:
// it signals it is ready, waits for a go-ahead file, sends one debit with
// FENCING_TOKEN and prints the HTTP status. It ignores SIGTERM, like a
// process too busy to notice, so the test can see the fence refuse it.
const writerEnv = "FENCEGW_TEST_WRITER"

func writerMain() int {
	signal.Ignore(syscall.SIGTERM)
	dir := os.Getenv(writerEnv)
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		return 10
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return 11
		}
	}
	req, _ := http.NewRequest(http.MethodPost, os.Getenv("FENCEGW_URL")+"/v1/ops/debit",
		strings.NewReader(`{"account": "acct-5", "amount_cents": 100}`))
	req.Header.Set("Fencing-Token", os.Getenv("FENCING_TOKEN"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println("error", err)
		return 12
	}
	resp.Body.Close()
	fmt.Println("status", resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		return 1
	}
	return 0
}

func buildFencegw(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fencegw")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestLockStopsAPausedHolder is the seed's cron-job timeline with real
// processes: A runs under `fencegw lock` and is frozen with SIGSTOP past
// its TTL; B takes the lock and writes; A is resumed and writes. The fence
// refuses A's write, `fencegw lock` stops A and exits 3, and the database
// holds B's write only.
func TestLockStopsAPausedHolder(t *testing.T) {
	bin := buildFencegw(t)
	ctx := context.Background()
	base, dbURL := serveDemo(t)

	start := func(name string) (*exec.Cmd, string, *bytes.Buffer) {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		cmd := exec.Command(bin, "lock", "--gateway", base, "--ttl", "2s", "--grace", "1s", "account/acct-5", "--", os.Args[0])
		cmd.Env = append(os.Environ(), writerEnv+"="+dir)
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // SIGSTOP freezes lock and command together
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		if !testenv.WaitFor(20*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "ready")); return err == nil }) {
			t.Fatalf("%s never started its command:\n%s", name, &out)
		}
		return cmd, dir, &out
	}
	goAhead := func(dir string) {
		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	a, aDir, aOut := start("a")
	if err := syscall.Kill(-a.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(15*time.Second, func() bool {
		resp, err := http.Get(base + "/v1/leases?resource=account/acct-5")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return strings.Contains(b.String(), `"holder":null`)
	}) {
		t.Fatal("A's lease never expired while A was stopped")
	}

	b, bDir, bOut := start("b")
	goAhead(bDir)
	if err := b.Wait(); err != nil || !strings.Contains(bOut.String(), "status 200") {
		t.Fatalf("B: %v\n%s", err, bOut)
	}

	goAhead(aDir)
	if err := syscall.Kill(-a.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	err := a.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitLeaseLost {
		t.Fatalf("A's fencegw lock exit = %v, want status %d\n%s", err, exitLeaseLost, aOut)
	}
	if !strings.Contains(aOut.String(), "status 409") {
		t.Fatalf("A's late write was not refused with 409:\n%s", aOut)
	}

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	var balance int64
	if err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM demo.write_log WHERE account = 'acct-5'), (SELECT balance_cents FROM demo.accounts WHERE id = 'acct-5')").Scan(&n, &balance); err != nil {
		t.Fatal(err)
	}
	if n != 1 || balance != 900 {
		t.Fatalf("database: %d write(s), balance %d; want B's one write and 900", n, balance)
	}
}

// TestLockExitStatuses: the command's own status passes through with the
// token in its environment; a held resource is status 4.
func TestLockExitStatuses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs, served := make(chan string, 1), make(chan error, 1)
	go func() {
		served <- serve(ctx, serveConfigFor(t, migrated(t), "../../testdata/demo/policy.yaml"), func(a string) { addrs <- a })
	}()
	defer func() { cancel(); <-served }()
	base := "http://" + <-addrs

	err := execute(ctx, io.Discard, "lock", "--gateway", base, "account/acct-6", "--", "sh", "-c", `case "$FENCING_TOKEN" in 1:*) exit 7;; esac; exit 1`)
	var exit *exitError
	if !errors.As(err, &exit) || exit.code != 7 || !exit.quiet {
		t.Fatalf("lock with a command exiting 7 = %v, want status 7 passed on quietly (and FENCING_TOKEN set)", err)
	}
	if err := execute(ctx, io.Discard, "lock", "--gateway", base, "account/acct-6", "--", "true"); err != nil {
		t.Fatalf("lock true = %v (was the lock released after the first run?)", err)
	}
	done := make(chan error, 1)
	go func() {
		done <- execute(ctx, io.Discard, "lock", "--gateway", base, "--ttl", "5s", "account/acct-6", "--", "sh", "-c", "touch "+filepath.Join(t.TempDir(), "x")+"; sleep 3")
	}()
	if !testenv.WaitFor(10*time.Second, func() bool {
		resp, err := http.Get(base + "/v1/leases?resource=account/acct-6")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return !strings.Contains(b.String(), `"holder":null`)
	}) {
		t.Fatal("the first lock never held the resource")
	}
	err = execute(ctx, io.Discard, "lock", "--gateway", base, "account/acct-6", "--", "true")
	if !errors.As(err, &exit) || exit.code != exitLocked {
		t.Fatalf("lock on a held resource = %v, want status %d", err, exitLocked)
	}
	if err := <-done; err != nil {
		t.Fatalf("first lock = %v", err)
	}
	if err := execute(ctx, io.Discard, "lock", "account/acct-6", "true"); !errors.Is(err, errUsage) {
		t.Fatalf("lock without -- = %v, want a usage error", err)
	}
	for _, args := range [][]string{{"", "--", "true"}, {"--ttl", "-1s", "r", "--", "true"}, {"--wait", "-1s", "r", "--", "true"},
		{"--ttl", "0s", "r", "--", "true"}, {"--ttl", "2h", "r", "--", "true"}, {"--wait", "6m", "r", "--", "true"}} {
		if err := execute(ctx, io.Discard, append([]string{"lock", "--gateway", base}, args...)...); !errors.Is(err, errUsage) {
			t.Fatalf("lock %q = %v, want a usage error", args, err)
		}
	}
	// A command that cannot run: the shell's statuses, the lock released.
	err = execute(ctx, io.Discard, "lock", "--gateway", base, "account/acct-6", "--", "/nonexistent/command")
	if !errors.As(err, &exit) || exit.code != 127 || exit.quiet {
		t.Fatalf("lock running a command that does not exist = %v, want status 127", err)
	}
	if err := execute(ctx, io.Discard, "lock", "--gateway", base, "account/acct-6", "--", "true"); err != nil {
		t.Fatalf("lock after a command that could not run = %v (was the lock released?)", err)
	}

	// Several resources: all held while the command runs, their tokens
	// numbered in the order given.
	check := `[ -z "$FENCING_TOKEN" ] && [ "$FENCEGW_RESOURCE_1" = account/acct-8 ] && [ "$FENCEGW_RESOURCE_2" = account/acct-7 ] &&
		[ -n "$FENCING_TOKEN_1" ] && [ -n "$FENCING_TOKEN_2" ] && [ "$FENCING_TOKEN_1" != "$FENCING_TOKEN_2" ] && exit 9; exit 1`
	err = execute(ctx, io.Discard, "lock", "--gateway", base, "account/acct-8", "account/acct-7", "--", "sh", "-c", check)
	if !errors.As(err, &exit) || exit.code != 9 {
		t.Fatalf("lock on two resources = %v, want status 9 (each token in its variable)", err)
	}
	if err := execute(ctx, io.Discard, "lock", "--gateway", base, "account/acct-8", "account/acct-8", "--", "true"); !errors.Is(err, errUsage) {
		t.Fatalf("lock on one resource twice = %v, want a usage error", err)
	}
	if err := execute(ctx, io.Discard, "lock", "--gateway", base, "account/acct-7", "account/acct-8", "--", "true"); err != nil {
		t.Fatalf("lock on both again = %v (were they released?)", err)
	}
}

// TestLockSendsTheBearerToken: where the policy declares clients, lock
// sends FENCEGW_BEARER_TOKEN; without it the refusal says what to set.
func TestLockSendsTheBearerToken(t *testing.T) {
	demo, err := os.ReadFile("../../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("billing-secret"))
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	withClient := string(demo) + "\nclients:\n  billing:\n    token_sha256: " + hex.EncodeToString(sum[:]) + "\n    operations: [\"*\"]\n"
	if err := os.WriteFile(pol, []byte(withClient), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs, served := make(chan string, 1), make(chan error, 1)
	go func() { served <- serve(ctx, serveConfigFor(t, migrated(t), pol), func(a string) { addrs <- a }) }()
	defer func() { cancel(); <-served }()
	base := "http://" + <-addrs

	t.Setenv("FENCEGW_BEARER_TOKEN", "")
	err = execute(ctx, io.Discard, "lock", "--gateway", base, "account/acct-11", "--", "true")
	var exit *exitError
	if !errors.As(err, &exit) || exit.code != exitUnavailable || !strings.Contains(err.Error(), "set FENCEGW_BEARER_TOKEN") {
		t.Fatalf("lock without a bearer token = %v, want status %d naming FENCEGW_BEARER_TOKEN", err, exitUnavailable)
	}
	t.Setenv("FENCEGW_BEARER_TOKEN", "billing-secret")
	if err := execute(ctx, io.Discard, "lock", "--gateway", base, "account/acct-11", "--", "true"); err != nil {
		t.Fatalf("lock with the bearer token = %v", err)
	}
}

// TestLockWarnsWhileRenewalsFail: a gateway that stops answering (a
// proxy's 503s) leaves the lease to run out; before it does, fencegw lock
// says each failed renewal and the time left, then stops the command as
// on a lost lease.
func TestLockWarnsWhileRenewalsFail(t *testing.T) {
	bin := buildFencegw(t)
	base, _ := serveDemo(t)
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	var failing atomic.Bool
	forward := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "503 Service Temporarily Unavailable", http.StatusServiceUnavailable)
			return
		}
		forward.ServeHTTP(w, r)
	}))
	defer proxy.Close()

	dir := t.TempDir()
	var out bytes.Buffer // read once the command is done
	cmd := exec.Command(bin, "lock", "--gateway", proxy.URL, "--ttl", "2s", "--grace", "1s", "account/acct-17", "--",
		"sh", "-c", "touch "+filepath.Join(dir, "ready")+"; exec sleep 60")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	if !testenv.WaitFor(20*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "ready")); return err == nil }) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the command never started:\n%s", out.String())
	}
	failing.Store(true)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitLeaseLost {
		t.Fatalf("fencegw lock exit = %v, want status %d\n%s", err, exitLeaseLost, out.String())
	}
	warned := strings.Index(out.String(), "fencegw lock: renewing account/acct-17 failed")
	lost := strings.Index(out.String(), "fencegw lock: lost account/acct-17")
	if warned < 0 || lost < warned || !strings.Contains(out.String(), "unless a renewal gets through") {
		t.Fatalf("want a failed renewal said, with the time left, before the loss:\n%s", out.String())
	}
}

// serveDemo runs fencegw serve on a migrated database with the demo
// policy until the test ends, and returns its URL and the database's.
func serveDemo(t *testing.T) (base, dbURL string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	dbURL = migrated(t)
	addrs, served := make(chan string, 1), make(chan error, 1)
	go func() {
		served <- serve(ctx, serveConfigFor(t, dbURL, "../../testdata/demo/policy.yaml"), func(a string) { addrs <- a })
	}()
	t.Cleanup(func() { cancel(); <-served })
	select {
	case a := <-addrs:
		return "http://" + a, dbURL
	case err := <-served:
		t.Fatalf("serve: %v", err)
	}
	return "", ""
}

package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// serveSemaphore serves the demo policy with pool/{pool}, a semaphore of
// 2 permits, and returns the gateway's URL.
func serveSemaphore(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../../testdata/demo/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol := strings.Replace(string(src), "operations:\n", `  pool:
    template: "pool/{pool}"
    permits: 2

operations:
  work:
    resource: pool
    args:
      pool: {type: string, max_length: 32}
    statements:
      - sql: SELECT :pool
`, 1)
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrs, served := make(chan string, 1), make(chan error, 1)
	go func() { served <- serve(ctx, serveConfigFor(t, migrated(t), path), func(a string) { addrs <- a }) }()
	t.Cleanup(func() { cancel(); <-served })
	select {
	case a := <-addrs:
		return "http://" + a
	case err := <-served:
		t.Fatalf("serve: %v", err)
	}
	return ""
}

// TestLockPermits: `fencegw lock --permits 2` runs two commands at once on
// one semaphore, each with its permit slot, its slot's resource and a
// token naming the slot; a third is refused while both hold; a size the
// policy does not say, or out of range, is refused.
func TestLockPermits(t *testing.T) {
	base := serveSemaphore(t)
	ctx := context.Background()
	var exit *exitError
	check := `case "$FENCEGW_PERMIT" in 1|2) ;; *) exit 1;; esac
		[ "$FENCEGW_RESOURCE" = "pool/p1#$FENCEGW_PERMIT" ] || exit 2
		case "$FENCING_TOKEN" in *"#$FENCEGW_PERMIT:"*) exit 9;; esac; exit 3`
	if err := execute(ctx, io.Discard, "lock", "--gateway", base, "--permits", "2", "pool/p1", "--", "sh", "-c", check); !errors.As(err, &exit) || exit.code != 9 {
		t.Fatalf("lock --permits 2 = %v, want status 9 (FENCEGW_PERMIT, FENCEGW_RESOURCE and FENCING_TOKEN name the slot)", err)
	}

	// Two holders at once; each waits for its go file to go.
	dir := t.TempDir()
	done := make(chan error, 2)
	for _, n := range []string{"1", "2"} {
		gate := filepath.Join(dir, "go"+n)
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		hold := `echo "$FENCEGW_PERMIT" > ` + filepath.Join(dir, "held"+n) + `; while [ -e ` + gate + ` ]; do sleep 0.05; done`
		go func() {
			done <- execute(ctx, io.Discard, "lock", "--gateway", base, "--wait", "1m", "--permits", "2", "pool/p1", "--", "sh", "-c", hold)
		}()
	}
	if !testenv.WaitFor(30*time.Second, func() bool {
		_, err1 := os.Stat(filepath.Join(dir, "held1"))
		_, err2 := os.Stat(filepath.Join(dir, "held2"))
		return err1 == nil && err2 == nil
	}) {
		t.Fatal("two permit holders never ran at once")
	}
	slot1, _ := os.ReadFile(filepath.Join(dir, "held1"))
	slot2, _ := os.ReadFile(filepath.Join(dir, "held2"))
	if string(slot1) == string(slot2) {
		t.Fatalf("both holders in slot %s", slot1)
	}
	err := execute(ctx, io.Discard, "lock", "--gateway", base, "--permits", "2", "pool/p1", "--", "true")
	var locked *client.LockedError
	if !errors.As(err, &exit) || exit.code != exitLocked || !errors.As(err, &locked) || !strings.Contains(locked.Problem.Detail, "all 2 permits are held") {
		t.Fatalf("a third lock while both hold = %v, want status %d, all 2 permits held", err, exitLocked)
	}
	for _, n := range []string{"1", "2"} {
		if err := os.Remove(filepath.Join(dir, "go"+n)); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("a permit holder = %v", err)
		}
	}

	err = execute(ctx, io.Discard, "lock", "--gateway", base, "--permits", "3", "pool/p1", "--", "true")
	if !errors.As(err, &exit) || exit.code != exitUnavailable || !strings.Contains(err.Error(), "pool/p1 is a semaphore of 2 permits in the policy") {
		t.Fatalf("lock --permits 3 on a semaphore of 2 = %v, want status %d naming the policy's 2", err, exitUnavailable)
	}
	for _, permits := range []string{"-1", "1001"} {
		err := execute(ctx, io.Discard, "lock", "--gateway", base, "--permits", permits, "pool/p1", "--", "true")
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "want 1 to 1000") {
			t.Fatalf("lock --permits %s = %v, want a usage error", permits, err)
		}
	}
}

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

// TestAWedgedJobLosesItsLock is the seed's §9.2.3: the job stays alive and
// `fencegw lock` keeps renewing, but the job no longer works (its
// heartbeat stops; its health command fails, or hangs). lock judges it
// wedged, stops it and releases the lock: the next holder, waiting all
// along, takes over, well before the job would ever have let go.
func TestAWedgedJobLosesItsLock(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs, served := make(chan string, 1), make(chan error, 1)
	go func() {
		served <- serve(ctx, serveConfigFor(t, migrated(t), "../../testdata/demo/policy.yaml"), func(a string) { addrs <- a })
	}()
	defer func() { cancel(); <-served }()
	base := "http://" + <-addrs

	tests := []struct {
		name     string
		resource string
		flags    func(dir string) []string
		job      string // runs in dir; beats while the file "beat" is there
		want     string
	}{
		{"heartbeat stops", "account/acct-64", func(dir string) []string {
			return []string{"--heartbeat-file", filepath.Join(dir, "heartbeat"), "--heartbeat-timeout", "1s"}
		}, `n=0; while [ $n -lt 5 ]; do touch heartbeat; n=$((n+1)); sleep 0.1; done; touch wedged; while :; do sleep 0.1; done`, "unchanged for 1s"},
		{"heartbeat file gone", "account/acct-65", func(dir string) []string {
			return []string{"--heartbeat-file", filepath.Join(dir, "heartbeat"), "--heartbeat-timeout", "1h"}
		}, `rm heartbeat; touch wedged; while :; do sleep 0.1; done`, "heartbeat file"},
		{"health command fails", "account/acct-66", func(dir string) []string {
			return []string{"--health-cmd", "test ! -e " + filepath.Join(dir, "wedged"), "--health-interval", "100ms"}
		}, `touch wedged; while :; do sleep 0.1; done`, "the health command failed"},
		{"health command hangs", "account/acct-67", func(dir string) []string {
			return []string{"--health-cmd", "while [ -e " + filepath.Join(dir, "wedged") + " ]; do sleep 0.1; done", "--health-interval", "100ms", "--health-timeout", "500ms"}
		}, `touch wedged; while :; do sleep 0.1; done`, "did not answer within 500ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "heartbeat"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			args := append([]string{"lock", "--gateway", base, "--ttl", "60s", "--grace", "500ms"}, tt.flags(dir)...)
			go func() {
				done <- execute(ctx, io.Discard, append(args, tt.resource, "--", "sh", "-c", "cd "+dir+" && touch started && "+tt.job)...)
			}()
			if !testenv.WaitFor(20*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "started")); return err == nil }) {
				t.Fatalf("the job never started: %v", <-done)
			}
			// The next holder waits longer than the wedged job could hold
			// the lock on its own (its TTL is renewed for as long as lock
			// lives): it is granted only because lock let go.
			next, err := client.New(base).Acquire(ctx, tt.resource, client.AcquireOptions{TTL: 10 * time.Second, Wait: time.Minute})
			if err != nil {
				t.Fatalf("the next holder: %v", err)
			}
			defer next.Release(context.Background())
			var exit *exitError
			if err := <-done; !errors.As(err, &exit) || exit.code != exitWedged || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("lock: %v, want exit %d saying %q", err, exitWedged, tt.want)
			}
			// lock said why on stderr as it stopped the job: main must
			// not print the same error a second time.
			if !exit.quiet {
				t.Errorf("lock: %v: not quiet, so main prints the wedge a second time", exit)
			}
			if _, err := os.Stat(filepath.Join(dir, "wedged")); err != nil {
				t.Fatalf("the job never wedged: %v", err)
			}
		})
	}
}

// TestLivenessFlagsAreChecked: a heartbeat file that does not exist, or a
// check without its bound, is a usage error before anything is taken.
func TestLivenessFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{
		{"--heartbeat-file", filepath.Join(t.TempDir(), "missing"), "--heartbeat-timeout", "1s"},
		{"--heartbeat-file", os.Args[0]},
		{"--health-cmd", "true", "--health-interval", "0s"},
		{"--health-cmd", "true", "--health-timeout", "-1s"},
	} {
		err := execute(context.Background(), io.Discard, append(append([]string{"lock", "--gateway", "http://127.0.0.1:1"}, args...), "r/1", "--", "true")...)
		if !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

// TestAHealthyJobKeepsItsLock: a job that keeps beating, with a health
// command that keeps succeeding, runs to its end under the lock, for longer
// than either check's bound.
func TestAHealthyJobKeepsItsLock(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs, served := make(chan string, 1), make(chan error, 1)
	go func() {
		served <- serve(ctx, serveConfigFor(t, migrated(t), "../../testdata/demo/policy.yaml"), func(a string) { addrs <- a })
	}()
	defer func() { cancel(); <-served }()
	dir := t.TempDir()
	beat := filepath.Join(dir, "heartbeat")
	if err := os.WriteFile(beat, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := execute(ctx, io.Discard, "lock", "--gateway", "http://"+<-addrs, "--ttl", "60s",
		"--heartbeat-file", beat, "--heartbeat-timeout", "500ms", "--health-cmd", "true", "--health-interval", "100ms",
		"account/acct-68", "--", "sh", "-c", `n=0; while [ $n -lt 20 ]; do echo $n >`+beat+`; n=$((n+1)); sleep 0.1; done`)
	if err != nil {
		t.Fatalf("a healthy job under lock: %v, want it to finish", err)
	}
}

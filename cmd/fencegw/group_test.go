package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// groupJob is the command of TestLockStopsTheWholeGroup: a shell (the
// group's leader, which dies on SIGTERM) starts a grandchild that ignores
// SIGTERM and loops, and notes their pids and the lease; then it ends as
// %[2]s says. %[1]s is the directory for the notes.
const groupJob = `
sh -c 'trap "" TERM; echo $$ >"$0/g.tmp"; mv "$0/g.tmp" "$0/grandchild"; while :; do sleep 0.05; done' %[1]s &
until [ -e %[1]s/grandchild ]; do sleep 0.01; done
echo "$$ $FENCEGW_LEASE_ID" >%[1]s/l.tmp; mv %[1]s/l.tmp %[1]s/leader
%[2]s`

// TestLockStopsTheWholeGroup: however the command ends (the lease lost,
// our own SIGTERM, the command exiting by itself), `fencegw lock` returns
// only once no process of its group is left, here a grandchild that
// ignores SIGTERM under a shell that does not.
func TestLockStopsTheWholeGroup(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to tell a process from a later one with its pid")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs, served := make(chan string, 1), make(chan error, 1)
	go func() {
		served <- serve(ctx, serveConfigFor(t, migrated(t), "../../testdata/demo/policy.yaml"), func(a string) { addrs <- a })
	}()
	defer func() { cancel(); <-served }()
	base := "http://" + <-addrs

	revoke := func(t *testing.T, _ context.CancelFunc, lease string) {
		req, _ := http.NewRequest(http.MethodDelete, base+"/v1/leases/"+lease, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE lease: %s", resp.Status)
		}
	}
	tests := []struct {
		name     string
		resource string
		leader   string                                                         // how the leader ends once the grandchild runs
		end      func(t *testing.T, interrupt context.CancelFunc, lease string) // what stops the command
		wantCode int
	}{
		{"lease lost", "account/acct-61", "wait", revoke, exitLeaseLost},
		{"lock interrupted", "account/acct-62", "wait", func(_ *testing.T, interrupt context.CancelFunc, _ string) { interrupt() }, 128 + int(syscall.SIGTERM)},
		{"command exited", "account/acct-63", "exit 6", func(*testing.T, context.CancelFunc, string) {}, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			runCtx, interrupt := context.WithCancel(ctx)
			defer interrupt()
			done := make(chan error, 1)
			go func() {
				done <- execute(runCtx, io.Discard, "lock", "--gateway", base, "--ttl", "3s", "--grace", "500ms",
					tt.resource, "--", "sh", "-c", fmt.Sprintf(groupJob, dir, tt.leader))
			}()
			notes := waitForNotes(t, dir, done)
			t.Cleanup(func() {
				if notes.grandchild.alive() {
					_ = syscall.Kill(notes.grandchild.pid, syscall.SIGKILL)
				}
			})

			tt.end(t, interrupt, notes.lease)
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("fencegw lock did not return")
			}

			var exit *exitError
			if !errors.As(err, &exit) || exit.code != tt.wantCode {
				t.Errorf("fencegw lock = %v, want status %d", err, tt.wantCode)
			}
			if err := syscall.Kill(-notes.pgid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("after fencegw lock returned, kill(-%d, 0) = %v, want ESRCH: its process group outlived it", notes.pgid, err)
			}
			if notes.grandchild.alive() {
				t.Errorf("the grandchild %d, which ignores SIGTERM, outlived fencegw lock", notes.grandchild.pid)
			}
		})
	}
}

// groupNotes are what groupJob writes down once its grandchild runs.
type groupNotes struct {
	pgid       int // the leader's pid
	lease      string
	grandchild process
}

// waitForNotes waits for groupJob's notes in dir, or fails the test if
// fencegw lock (done) returns first.
func waitForNotes(t *testing.T, dir string, done <-chan error) groupNotes {
	t.Helper()
	var leader []byte
	if !testenv.WaitFor(20*time.Second, func() bool {
		var err error
		leader, err = os.ReadFile(filepath.Join(dir, "leader"))
		return err == nil || len(done) > 0
	}) || leader == nil {
		select {
		case err := <-done:
			t.Fatalf("fencegw lock returned before its command ran: %v", err)
		default:
			t.Fatal("the command never wrote down its pids")
		}
	}
	var n groupNotes
	if _, err := fmt.Sscan(string(leader), &n.pgid, &n.lease); err != nil {
		t.Fatalf("leader note %q: %v", leader, err)
	}
	gc, err := os.ReadFile(filepath.Join(dir, "grandchild"))
	if err != nil {
		t.Fatal(err)
	}
	if n.grandchild.pid, err = strconv.Atoi(strings.TrimSpace(string(gc))); err != nil {
		t.Fatal(err)
	}
	if n.grandchild.start = processStart(n.grandchild.pid); n.grandchild.start == "" {
		t.Fatalf("grandchild %d gone before the test saw it", n.grandchild.pid)
	}
	return n
}

// process is one process: its pid and its start time, as a pid alone
// may have been reused by the time it is looked at again.
type process struct {
	pid   int
	start string
}

// alive reports whether p still exists. A zombie counts: it is in its
// process group until reaped.
func (p process) alive() bool { return processStart(p.pid) == p.start }

// processStart is pid's start time in clock ticks after boot (field 22
// of /proc/PID/stat), or "" if there is no such process.
func processStart(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

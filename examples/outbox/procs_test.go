//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegw/fencegw/examples/internal/holdpoint"
	"github.com/fencegw/fencegw/examples/internal/storytest"
	"github.com/fencegw/fencegw/internal/harness/pause"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// binaries are the programs of a dispatcher: `fencegw lock` and this
// example's command.
type binaries struct{ fencegw, outbox string }

// build compiles fencegw and this example into a folder of the test:
// linking fencegw takes seconds, so the subtests share one build.
func build(t *testing.T) binaries {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "../../cmd/fencegw", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return binaries{filepath.Join(dir, "fencegw"), filepath.Join(dir, "outbox")}
}

// dispatcher is `fencegw lock outbox/QUEUE -- outbox dispatch`: a leader
// of the queue for one drain.
type dispatcher struct {
	name   string
	cmd    *exec.Cmd
	out    *testenv.Buffer // its output and its job's
	done   chan struct{}
	status int // exit status once done; -1 if killed by a signal
}

// dispatcherRun is how a dispatcher is started.
type dispatcherRun struct {
	gateway, psp, queue string
	ttl                 string // of its lease
	holdDir             string // FENCEGW_HOLD_DIR; "" disarms the hold points
	noKey               bool   // --no-idempotency-key: the control
}

// startDispatcher starts a dispatcher in a process group of its own; it
// is killed, job included, when the test ends.
func startDispatcher(t *testing.T, bin binaries, name string, r dispatcherRun) *dispatcher {
	t.Helper()
	d := &dispatcher{name: name, out: &testenv.Buffer{}, done: make(chan struct{})}
	args := []string{"lock", "--gateway", r.gateway, "--ttl", r.ttl, "--wait", "60s", "--grace", "1s",
		"outbox/" + r.queue, "--", bin.outbox, "dispatch", "--psp", r.psp, "--psp-timeout", "1m"}
	if r.noKey {
		args = append(args, "--no-idempotency-key")
	}
	d.cmd = exec.Command(bin.fencegw, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, holdpoint.Env+"=") {
			d.cmd.Env = append(d.cmd.Env, kv)
		}
	}
	if r.holdDir != "" {
		d.cmd.Env = append(d.cmd.Env, holdpoint.Env+"="+r.holdDir)
	}
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The job shares the output pipe: do not wait for it past the lock.
	d.cmd.WaitDelay = 5 * time.Second
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.kill()
		if t.Failed() {
			t.Logf("output of %s:\n%s", d.name, d.out)
		}
	})
	go func() {
		_ = d.cmd.Wait()
		d.status = d.cmd.ProcessState.ExitCode()
		close(d.done)
	}()
	return d
}

// wait waits for the dispatcher to exit and returns its status, or fails
// the test.
func (d *dispatcher) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-d.done:
		return d.status
	case <-time.After(60 * time.Second):
	}
	t.Fatalf("%s did not exit", d.name)
	return 0
}

// job is the pid of the dispatcher's job, the child of its `fencegw lock`.
func (d *dispatcher) job(t *testing.T) int {
	t.Helper()
	var kids []int
	if !testenv.WaitFor(storytest.EventTimeout, func() bool { kids = pause.Children(d.cmd.Process.Pid); return len(kids) == 1 }) {
		t.Fatalf("%s: `fencegw lock` has children %v, want its one job", d.name, kids)
	}
	return kids[0]
}

// kill ends the dispatcher and its job, frozen or not. `fencegw lock`
// starts its job in a process group of its own, so the job's group is
// killed first, while its parent still names it.
func (d *dispatcher) kill() {
	select {
	case <-d.done:
		return
	default:
	}
	for _, child := range pause.Children(d.cmd.Process.Pid) {
		_ = syscall.Kill(-child, syscall.SIGKILL)
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	<-d.done
}

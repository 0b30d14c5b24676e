//go:build linux

package recon_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fencegw/fencegw/examples/internal/holdpoint"
	"github.com/fencegw/fencegw/internal/harness/pause"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// binaries are the programs of a pod.
type binaries struct{ fencegw, reconcile string }

// build compiles fencegw and the reconcile job into a folder of the test:
// linking fencegw takes seconds, so the tests share one build.
func build(t *testing.T) binaries {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "../../cmd/fencegw", "./reconcile").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return binaries{filepath.Join(dir, "fencegw"), filepath.Join(dir, "reconcile")}
}

// pod is one contender of the story: `fencegw lock RESOURCE -- reconcile`.
type pod struct {
	cmd    *exec.Cmd
	out    *testenv.Buffer // its output and its job's
	done   chan struct{}
	status int // exit status once done; -1 if killed by a signal
}

// startPod starts a pod in a process group of its own, with the hold
// points of its job in holdDir; it is killed, job included, when the test
// ends.
func startPod(t *testing.T, bin binaries, gatewayURL, holdDir string) *pod {
	t.Helper()
	p := &pod{out: &testenv.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin.fencegw, "lock", "--gateway", gatewayURL, "--ttl", "2s", "--wait", "60s", "--grace", "1s",
		resource, "--", bin.reconcile)
	p.cmd.Env = append(os.Environ(), holdpoint.Env+"="+holdDir)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The job shares the output pipe: do not wait for it past the pod.
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.kill)
	go func() {
		_ = p.cmd.Wait()
		p.status = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	return p
}

func (p *pod) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill ends the pod and its job, frozen or not. `fencegw lock` starts its
// job in a process group of its own, so the job's group is killed first,
// while its parent still names it.
func (p *pod) kill() {
	if p.exited() {
		return
	}
	for _, child := range pause.Children(p.cmd.Process.Pid) {
		_ = syscall.Kill(-child, syscall.SIGKILL)
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

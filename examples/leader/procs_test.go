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
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// process is one run of the built example: a candidate or an observer.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *testenv.Buffer
}

// buildLeader builds this package's command, so that each candidate is a
// process of its own: one the test can freeze, resume and kill.
func buildLeader(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "leader")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// election is how the test's candidates run: short leases, frequent
// writes and observations, so that events come quickly.
type election struct {
	bin, gateway, group string
	holdDir             string // FENCEGW_HOLD_DIR; "" disarms the hold point
}

// start runs the command as name with extra flags, in a process group of
// its own, killed when the test ends. Its output is kept, and shown if the
// test fails.
func (e election) start(t *testing.T, name string, extra ...string) *process {
	t.Helper()
	args := append([]string{"--gateway", e.gateway, "--group", e.group, "--name", name,
		"--ttl", "2s", "--every", "200ms", "--poll", "100ms", "--wait", "1m"}, extra...)
	p := &process{name: name, cmd: exec.Command(e.bin, args...), out: &testenv.Buffer{}}
	p.cmd.Env = append(os.Environ(), holdpoint.Env+"="+e.holdDir)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) // a frozen process dies too
		_ = p.cmd.Wait()
		if t.Failed() {
			t.Logf("output of %s:\n%s", p.name, p.out)
		}
	})
	return p
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// others returns the processes of all but p.
func others(p *process, all ...*process) []*process {
	var out []*process
	for _, q := range all {
		if q != p {
			out = append(out, q)
		}
	}
	return out
}

// saw reports whether the process printed lines containing each of
// events, in that order.
func (p *process) saw(events ...string) bool {
	out := p.out.String()
	for _, ev := range events {
		i := strings.Index(out, ev)
		if i < 0 {
			return false
		}
		out = out[i+len(ev):]
	}
	return true
}

// await waits for the process to print events, in order, or fails the test.
func (p *process) await(t *testing.T, events ...string) {
	t.Helper()
	if !testenv.WaitFor(20*time.Second, func() bool { return p.saw(events...) }) {
		t.Fatalf("%s never printed %q", p.name, events)
	}
}

// lineAfter waits for the first whole line the process prints after mark,
// a length of its output, and returns it.
func (p *process) lineAfter(t *testing.T, mark int) string {
	t.Helper()
	var line string
	if !testenv.WaitFor(20*time.Second, func() bool {
		rest := p.out.String()[mark:]
		i := strings.IndexByte(rest, '\n')
		line = rest[:max(i, 0)]
		return i >= 0
	}) {
		t.Fatalf("%s printed nothing more", p.name)
	}
	return line
}

// passOthers lets every process but pid go on as soon as it reaches the
// hold point, until the test ends.
func passOthers(t *testing.T, dir string, pid int) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			hs, _ := holdpoint.Waiting(dir, "write")
			for _, h := range hs {
				if h.Pid != pid && !h.Released() {
					_ = h.Release()
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
}

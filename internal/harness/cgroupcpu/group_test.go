package cgroupcpu

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestThrottle: a process spinning on the CPU, moved into a group with 1
// ms per 100 ms, is stalled at the limit (the kernel counts throttled
// periods); moved back out and the group removed, it runs on. Where the
// machine does not let this process make a cgroup, the test says why and
// skips: that is the answer the torture reports too.
func TestThrottle(t *testing.T) {
	g, err := New(fmt.Sprintf("cgroupcpu-test-%d", os.Getpid()), time.Millisecond, 100*time.Millisecond)
	if err != nil {
		t.Skipf("this machine does not allow a CPU-limited cgroup: %v", err)
	}
	spin := exec.Command("sh", "-c", "while :; do :; done")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = spin.Process.Kill(); _ = spin.Wait() }()
	if err := g.Add(spin.Process.Pid); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := g.Throttled()
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a spinning process at 1 ms per 100 ms was never throttled")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := g.Remove(spin.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.dir); !os.IsNotExist(err) {
		t.Fatalf("the group's directory is still there: %v", err)
	}
}

func TestNewRefusesBadLimits(t *testing.T) {
	for _, tt := range []struct {
		name          string
		quota, period time.Duration
	}{
		{"x", 0, time.Second}, {"x", time.Millisecond, 2 * time.Second}, {"a/b", time.Millisecond, time.Second},
	} {
		if _, err := New(tt.name, tt.quota, tt.period); err == nil {
			t.Errorf("New(%q, %v, %v) made a group", tt.name, tt.quota, tt.period)
		}
	}
}

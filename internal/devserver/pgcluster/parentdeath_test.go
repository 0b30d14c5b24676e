//go:build linux

package pgcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

const helperEnv = "FENCEGW_PGCLUSTER_HELPER_DIR"

// TestHelperProcess is not a real test: TestParentDeathStopsServer runs the
// test binary as a child that starts a cluster and then waits to be killed.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("helper process for TestParentDeathStopsServer")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Dir: dir, Settings: testSettings})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(c.cmd.Process.Pid)
	time.Sleep(time.Hour)
}

// TestParentDeathStopsServer checks Pdeathsig: when the process that called
// Start dies without Stop, the server shuts itself down.
func TestParentDeathStopsServer(t *testing.T) {
	dir, err := os.MkdirTemp("", "pgcluster-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Adopt the orphaned postmaster so this test can reap it and see it
	// exit; otherwise it goes to init, which in some containers never reaps.
	setSubreaper(t, true)
	t.Cleanup(func() { setSubreaper(t, false) })

	helper := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	helper.Env = append(os.Environ(), helperEnv+"="+dir)
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	var pid int
	if _, scanErr := fmt.Sscan(line, &pid); err != nil || scanErr != nil {
		_ = helper.Process.Kill()
		_ = helper.Wait()
		t.Fatalf("helper did not report a pid: %q (%v, %v)", line, err, scanErr)
	}

	_ = helper.Process.Kill()
	_ = helper.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if got == pid {
			t.Logf("orphaned postmaster exited: %v", ws)
			return
		}
		if err != nil && !errors.Is(err, syscall.ECHILD) && !errors.Is(err, syscall.EINTR) {
			t.Fatalf("wait4 %d: %v", pid, err)
		}
		if time.Now().After(deadline) {
			killGroup(pid)
			t.Fatalf("postmaster %d still running 20s after its parent died", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// setSubreaper makes orphaned descendants re-parent to this process.
func setSubreaper(t *testing.T, on bool) {
	const prSetChildSubreaper = 36 // PR_SET_CHILD_SUBREAPER, linux/prctl.h
	var arg uintptr
	if on {
		arg = 1
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, arg, 0); errno != 0 {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER, %d): %v", arg, errno)
	}
}

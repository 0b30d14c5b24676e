//go:build linux

package pause

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestStopResume: a stopped process is Stopped, runs again once resumed,
// is among its parent's Children, and is Ended once it exits, before its
// parent reaps it.
func TestStopResume(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if kids := Children(os.Getpid()); !slices.Contains(kids, pid) {
		t.Errorf("children of the test: %v, want %d among them", kids, pid)
	}
	if err := Stop(pid); err != nil || !Stopped(pid) {
		t.Fatalf("Stop: %v, Stopped %t; want stopped", err, Stopped(pid))
	}
	if err := Resume(pid); err != nil {
		t.Fatal(err)
	}
	if !waitFor(func() bool { return !Stopped(pid) }) {
		t.Error("still stopped after Resume")
	}
	if Ended(pid) {
		t.Error("Ended while it runs")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(func() bool { return Ended(pid) }) {
		t.Error("not Ended once killed (a zombie, not reaped yet)")
	}
	if err := Stop(1 << 30); err == nil {
		t.Error("Stop of no such process: nil error")
	}
}

func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestParseStat: the state and parent are read after the last parenthesis,
// whatever the command's name holds; anything else is refused.
func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		line, state string
		ppid        int
		err         error
	}{
		{"42 (sleep) S 7 42 42 0", "S", 7, nil},
		{"42 (a (b) c) T 1 2 3", "T", 1, nil},
		{"42 (x)) Z 0", "Z", 0, nil},
		{"42 sleep S 7", "", 0, errBadStat},
		{"42 (sleep) S", "", 0, errBadStat},
		{"42 (sleep) SS 7", "", 0, errBadStat},
		{"42 (sleep) S -7", "", 0, errBadStat},
		{"42 (sleep) S x", "", 0, errBadStat},
	} {
		state, ppid, err := parseStat([]byte(tc.line))
		if state != tc.state || ppid != tc.ppid || !errors.Is(err, tc.err) {
			t.Errorf("parseStat(%q) = %q, %d, %v; want %q, %d, %v", tc.line, state, ppid, err, tc.state, tc.ppid, tc.err)
		}
	}
}

// FuzzParseStat: any input is read or refused, never a panic, and what is
// read is a one-letter state and a parent that is not negative.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("42 (sleep) S 7 42 42 0"))
	f.Add([]byte("42 (a (b) c) T 1 2 3"))
	f.Add([]byte(")"))
	f.Add([]byte("1 () Z " + strconv.Itoa(1<<62)))
	f.Fuzz(func(t *testing.T, b []byte) {
		state, ppid, err := parseStat(b)
		if err == nil && (len(state) != 1 || ppid < 0) {
			t.Errorf("parseStat(%q) = %q, %d: accepted a malformed line", b, state, ppid)
		}
	})
}

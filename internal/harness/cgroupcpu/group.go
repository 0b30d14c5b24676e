package cgroupcpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Group is a cgroup whose members share a CPU limit.
type Group struct {
	h   hierarchy // the parent, where members go back
	dir string
}

// New makes the group name under this process's cpu cgroup, letting its
// members run quota of CPU time per period (each 1 ms to 1 s). The error
// says why the machine does not allow it.
func New(name string, quota, period time.Duration) (*Group, error) {
	if quota < time.Millisecond || period < time.Millisecond || quota > time.Second || period > time.Second || strings.ContainsRune(name, '/') {
		return nil, errors.New("cgroupcpu: quota and period must be 1ms to 1s, and the name one path element")
	}
	mi, err1 := os.ReadFile("/proc/self/mountinfo")
	cg, err2 := os.ReadFile("/proc/self/cgroup")
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("cgroupcpu: %w", err)
	}
	h, err := findHierarchy(mi, cg)
	if err != nil {
		return nil, err
	}
	g := &Group{h: h, dir: filepath.Join(h.dir, name)}
	if h.v2 {
		// The controller must be handed down to the parent's children; a
		// parent holding processes itself cannot (v2's no-internal-process
		// rule), and then this machine does not allow it.
		if err := write(filepath.Join(h.dir, "cgroup.subtree_control"), "+cpu"); err != nil {
			return nil, fmt.Errorf("cgroupcpu: cannot delegate the cpu controller under %s: %w", h.dir, err)
		}
	}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroupcpu: cannot make a cgroup: %w", err)
	}
	us := func(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) }
	if h.v2 {
		err = write(filepath.Join(g.dir, "cpu.max"), us(quota)+" "+us(period))
	} else {
		err = errors.Join(write(filepath.Join(g.dir, "cpu.cfs_period_us"), us(period)), write(filepath.Join(g.dir, "cpu.cfs_quota_us"), us(quota)))
	}
	if err != nil {
		_ = os.Remove(g.dir)
		return nil, fmt.Errorf("cgroupcpu: cannot limit the cgroup's CPU: %w", err)
	}
	return g, nil
}

// Add moves process pid, every thread of it, into the group.
func (g *Group) Add(pid int) error {
	return g.move(g.dir, pid)
}

// Remove moves process pid back to the cgroup the group was made under.
func (g *Group) Remove(pid int) error {
	return g.move(g.h.dir, pid)
}

func (g *Group) move(dir string, pid int) error {
	if err := write(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
		return fmt.Errorf("cgroupcpu: move %d: %w", pid, err)
	}
	return nil
}

// Throttled returns how many periods so far the group's members were
// stalled at the limit.
func (g *Group) Throttled() (int64, error) {
	b, err := os.ReadFile(filepath.Join(g.dir, "cpu.stat"))
	if err != nil {
		return 0, fmt.Errorf("cgroupcpu: %w", err)
	}
	return parseThrottled(b)
}

// Close moves whatever members remain back and removes the group.
func (g *Group) Close() error {
	if b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs")); err == nil {
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = g.Remove(pid)
			}
		}
	}
	if err := os.Remove(g.dir); err != nil {
		return fmt.Errorf("cgroupcpu: %w", err)
	}
	return nil
}

// parseThrottled reads nr_throttled from cpu.stat ("KEY VALUE" lines).
func parseThrottled(stat []byte) (int64, error) {
	for _, line := range strings.Split(string(stat), "\n") {
		if v, ok := strings.CutPrefix(line, "nr_throttled "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("cgroupcpu: cpu.stat: nr_throttled %q", v)
			}
			return n, nil
		}
	}
	return 0, errors.New("cgroupcpu: cpu.stat has no nr_throttled")
}

func write(path, value string) error {
	return os.WriteFile(path, []byte(value), 0o644)
}

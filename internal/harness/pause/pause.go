//go:build linux

// Package pause freezes and resumes processes for tests that replay the
// seed's pauses with real processes (a GC pause, a VM stall: SIGSTOP), and
// reads their state from /proc: whether every thread has stopped, whether
// a process has ended, which processes a parent started. It imports
// nothing of fencegw.
package pause

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// ErrNotStopped: a process did not stop within Stop's bound.
var ErrNotStopped = errors.New("pause: the process did not stop")

// stopTimeout bounds Stop's wait for a stopped process's threads.
const stopTimeout = 30 * time.Second

// Stop sends SIGSTOP to each of pids and returns once every thread of
// each has stopped: kill returns before a multi-threaded process has
// stopped everywhere, and a thread still running could send what the
// test means to hold back.
func Stop(pids ...int) error {
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return fmt.Errorf("pause: kill -STOP %d: %w", pid, err)
		}
	}
	deadline := time.Now().Add(stopTimeout)
	for _, pid := range pids {
		for !Stopped(pid) {
			if time.Now().After(deadline) {
				return fmt.Errorf("%w: %d", ErrNotStopped, pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// Resume sends SIGCONT to pid.
func Resume(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("pause: kill -CONT %d: %w", pid, err)
	}
	return nil
}

// Stopped reports whether every thread of process pid is stopped.
func Stopped(pid int) bool {
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "stat"))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			return false
		}
		if state, _, err := parseStat(b); err != nil || state != "T" {
			return false
		}
	}
	return true
}

// Ended reports whether process pid has exited: gone, or a zombie that
// its parent (frozen, perhaps) has not reaped yet.
func Ended(pid int) bool {
	state, _, err := stat(pid)
	return err != nil || state == "Z"
}

// Children lists the processes whose parent is pid.
func Children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, err := stat(child); err == nil && ppid == pid {
			out = append(out, child)
		}
	}
	return out
}

// stat reads a process's state and parent.
func stat(pid int) (state string, ppid int, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, err
	}
	return parseStat(b)
}

// errBadStat: a stat line not of the form "PID (COMM) STATE PPID ...".
var errBadStat = errors.New("pause: not a /proc stat line")

// parseStat reads the state and the parent of a /proc/PID/stat line,
// "PID (COMM) STATE PPID ...", whose COMM may hold spaces and parentheses.
func parseStat(b []byte) (state string, ppid int, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, errBadStat
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 2 || len(fields[0]) != 1 {
		return "", 0, errBadStat
	}
	ppid, err = strconv.Atoi(string(fields[1]))
	if err != nil || ppid < 0 {
		return "", 0, errBadStat
	}
	return string(fields[0]), ppid, nil
}

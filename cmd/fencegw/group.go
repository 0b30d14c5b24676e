package main

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// groupPoll is how often a stopping group is looked at: the end of a
// process that is not our child sends us no event.
const groupPoll = 10 * time.Millisecond

// processGroup is the process group `fencegw lock` runs its command in:
// the command, which leads it, and everything the command starts, unless
// that leaves the group with setsid or setpgid. The lock is released only
// once the group is empty, so nothing the command started writes on after
// it.
type processGroup struct {
	pgid int
	done chan struct{} // closed once the leader has been reaped
	err  error         // the leader's Wait, set before done is closed
}

// startGroup starts cmd as the leader of a process group of its own.
func startGroup(cmd *exec.Cmd) (*processGroup, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &processGroup{pgid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		g.err = cmd.Wait()
		close(g.done)
	}()
	return g, nil
}

// stop ends every process of the group: SIGTERM, then SIGKILL once grace
// has passed with any of them still there, whether or not the leader has
// gone (a shell that exits on SIGTERM leaves its children running). It
// returns when the group is empty, with the leader's Wait error. It does
// not give up after SIGKILL: what SIGKILL has not ended yet is in the
// kernel (uninterruptible sleep), and returning would report the command
// stopped while part of it may still finish a write.
func (g *processGroup) stop(grace time.Duration) error {
	g.signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	if !g.waitEmpty(t.C) {
		g.signal(syscall.SIGKILL)
		g.waitEmpty(nil)
	}
	return g.err
}

// waitEmpty waits until the group is empty or timeout fires, and reports
// whether it is empty.
func (g *processGroup) waitEmpty(timeout <-chan time.Time) bool {
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	leader := g.done
	for !g.empty() {
		select {
		case <-leader:
			leader = nil // reaped: look again at once
		case <-tick.C:
		case <-timeout:
			return g.empty()
		}
	}
	return true
}

// empty reports whether no process of the group is left. kill(2) finds a
// zombie until its parent reaps it: the leader is reaped by Wait, and the
// group's orphans, whose parent we are as a child subreaper, here.
func (g *processGroup) empty() bool {
	select {
	case <-g.done:
	default:
		return false
	}
	g.reapOrphans()
	return errors.Is(syscall.Kill(-g.pgid, 0), syscall.ESRCH)
}

// reapOrphans reaps the group's processes that have exited after their
// parent did. It runs only once Wait has reaped the leader, so that it
// cannot take the leader's status from Wait.
func (g *processGroup) reapOrphans() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-g.pgid, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil || pid <= 0: // none of ours left (ECHILD), or none exited yet
			return
		}
	}
}

// signal signals every process of the group. Once the group is empty its
// id may be reused, so callers signal only a group they last saw in use.
func (g *processGroup) signal(sig syscall.Signal) {
	_ = syscall.Kill(-g.pgid, sig)
}

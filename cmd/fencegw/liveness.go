package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// A sidecar that renews a lease proves that the sidecar lives, not that the
// job does (the seed's §9.2.3): a job wedged on a lock of its own, a dead
// dependency or an endless loop keeps its lease, and everyone waiting,
// forever. With a liveness check, `fencegw lock` renews only while the job
// proves it works: it touches a heartbeat file, or a health command
// succeeds. When it stops proving it, lock stops the job as on a lost
// lease and releases the lock, so the next holder takes over within the
// check's bound.

// errWedged is the job judged not to be working: it stopped proving it.
var errWedged = errors.New("lock: the job stopped proving it works")

// liveness is how the job proves it works; the zero value asks nothing.
type liveness struct {
	heartbeatFile    string
	heartbeatTimeout time.Duration
	healthCmd        string
	healthInterval   time.Duration
	healthTimeout    time.Duration
}

// check refuses a liveness configuration that cannot work: a heartbeat
// file that does not exist (a typo would wedge every run at once), a
// check without its bound.
func (l liveness) check() error {
	switch {
	case l.heartbeatFile != "" && l.heartbeatTimeout <= 0:
		return fmt.Errorf("%w: lock: --heartbeat-file needs a positive --heartbeat-timeout", errUsage)
	case l.healthCmd != "" && (l.healthInterval <= 0 || l.healthTimeout <= 0):
		return fmt.Errorf("%w: lock: --health-cmd needs a positive --health-interval and --health-timeout", errUsage)
	case l.heartbeatFile != "":
		if _, err := os.Stat(l.heartbeatFile); err != nil {
			return fmt.Errorf("%w: lock: --heartbeat-file %s: %w (create it before the job starts; the job touches it to prove it works)", errUsage, l.heartbeatFile, err)
		}
	}
	return nil
}

// watch reports on the returned channel, once, why the job stopped proving
// it works; it ends with ctx.
func (l liveness) watch(ctx context.Context) <-chan error {
	wedged := make(chan error, 1)
	if l.heartbeatFile != "" {
		go l.watchHeartbeat(ctx, wedged)
	}
	if l.healthCmd != "" {
		go l.watchHealth(ctx, wedged)
	}
	return wedged
}

// watchHeartbeat judges the job wedged when heartbeatFile has not changed
// for heartbeatTimeout, or is gone. A change is any new modification time
// or size; the time since the last one is counted on this process's
// monotonic clock, never by comparing the file's time with ours, so a
// clock that jumps moves nothing.
func (l liveness) watchHeartbeat(ctx context.Context, wedged chan<- error) {
	type stamp struct {
		mod  time.Time
		size int64
	}
	read := func() (stamp, error) {
		fi, err := os.Stat(l.heartbeatFile)
		if err != nil {
			return stamp{}, err
		}
		return stamp{fi.ModTime(), fi.Size()}, nil
	}
	last, err := read()
	seen := time.Now()
	// Often enough to notice a missing file soon, and a stale one within
	// an eighth of its timeout.
	tick := time.NewTicker(min(max(l.heartbeatTimeout/8, 10*time.Millisecond), time.Second))
	defer tick.Stop()
	for err == nil {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var now stamp
		if now, err = read(); err != nil {
			break
		}
		if now != last {
			last, seen = now, time.Now()
		} else if time.Since(seen) > l.heartbeatTimeout {
			err = fmt.Errorf("%w: %s unchanged for %s", errWedged, l.heartbeatFile, l.heartbeatTimeout)
		}
	}
	if !errors.Is(err, errWedged) {
		err = fmt.Errorf("%w: heartbeat file: %w", errWedged, err)
	}
	report(wedged, err)
}

// watchHealth runs healthCmd every healthInterval, each run bounded by
// healthTimeout, and judges the job wedged at the first that fails or
// hangs.
func (l liveness) watchHealth(ctx context.Context, wedged chan<- error) {
	tick := time.NewTicker(l.healthInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		hctx, cancel := context.WithTimeout(ctx, l.healthTimeout)
		cmd := exec.CommandContext(hctx, "/bin/sh", "-c", l.healthCmd)
		cmd.WaitDelay = time.Second // a child keeping its output open must not hang us
		out, err := cmd.CombinedOutput()
		timedOut := hctx.Err() != nil && ctx.Err() == nil
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case timedOut:
			report(wedged, fmt.Errorf("%w: the health command did not answer within %s", errWedged, l.healthTimeout))
			return
		case err != nil:
			why := fmt.Errorf("%w: the health command failed: %w", errWedged, err)
			if line := lastLine(string(out)); line != "" {
				why = fmt.Errorf("%w: %s", why, line)
			}
			report(wedged, why)
			return
		}
	}
}

// report sends err unless a report is already there.
func report(ch chan<- error, err error) {
	select {
	case ch <- err:
	default:
	}
}

// lastLine is the last non-empty line of s, clipped: what a failing health
// command said last.
func lastLine(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			s = s[i+1:]
			break
		}
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

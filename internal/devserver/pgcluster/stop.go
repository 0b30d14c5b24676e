package pgcluster

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// stopTimeout bounds a fast shutdown before Stop falls back to SIGKILL. Fast
// shutdown aborts sessions and writes one checkpoint, normally well under
// this. A variable only so tests can shorten it.
var stopTimeout = 15 * time.Second

// ErrKilled is wrapped by Stop when the server had to be SIGKILLed.
var ErrKilled = errors.New("pgcluster: server did not shut down in time and was killed")

// Stop shuts the server down (fast shutdown, then SIGKILL after a bound),
// closes the log and removes Dir if Start created it. It is idempotent and
// safe on a partially started cluster.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.stop() })
	return c.stopErr
}

func (c *Cluster) stop() error {
	var errs []error
	if c.cmd != nil {
		if err := c.shutdown(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.logFile != nil {
		if err := c.logFile.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close log: %w", err))
		}
	}
	if c.ownsDir {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove dir: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pgcluster stop: %w", err)
	}
	return nil
}

// shutdown sends SIGINT (PostgreSQL's fast shutdown) to the postmaster only;
// it then stops its own backends in order and exits after them.
func (c *Cluster) shutdown() error {
	select {
	case <-c.exited:
		return nil // already gone, e.g. a failed start
	default:
	}
	_ = c.cmd.Process.Signal(os.Interrupt)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-c.exited:
		return nil
	case <-timer.C:
	}
	// Kill the group, not just the postmaster, so its backends go too; the
	// second sweep catches any forked meanwhile (the kernel keeps the group
	// id reserved while members remain).
	pid := c.cmd.Process.Pid
	killGroup(pid)
	_ = c.cmd.Process.Kill()
	<-c.exited
	killGroup(pid)
	return fmt.Errorf("shutdown pid %d: %w after %s", pid, ErrKilled, stopTimeout)
}

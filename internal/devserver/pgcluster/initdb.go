package pgcluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"
)

// initdb creates the cluster with trust auth for the postgres superuser. The
// C locale avoids failures on hosts without generated locales, and
// --no-sync skips fsyncs that a throwaway cluster does not need.
func (c *Cluster) initdb(ctx context.Context, binDir string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"),
		"-D", c.dataDir,
		"-U", "postgres",
		"--auth=trust",
		"-E", "UTF8",
		"--locale=C",
		"--no-sync",
	)
	cmd.Dir = c.dir
	cmd.Env = childEnv()
	cmd.Stdout, cmd.Stderr = c.out, c.out
	cmd.SysProcAttr = sysProcAttr(c.runAs)
	// initdb runs postgres in bootstrap mode as its child; on cancel, kill
	// the whole group so that child does not outlive it.
	cmd.Cancel = func() error {
		killGroup(cmd.Process.Pid)
		return cmd.Process.Kill()
	}
	// Output goes through a pipe when Log is not a file; do not let a
	// lingering writer hold Wait forever.
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		tail := c.logTail()
		return fmt.Errorf("initdb %s after %s: %w%s%s", c.dataDir, time.Since(start).Round(time.Millisecond),
			err, c.runAs.reachHint(c.dir, err, tail), tail)
	}
	return nil
}

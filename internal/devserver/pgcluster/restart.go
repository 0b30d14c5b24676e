package pgcluster

import (
	"context"
	"errors"
	"fmt"
)

// Restart stops the server as Stop does (fast shutdown: every commit
// acknowledged is on disk; SIGKILL after the bound) and starts it again on
// the same data, port and settings, keeping its directory and log — an
// operator's restart, which a primary's standbys and clients must ride
// through. A standby restarts as a standby. ctx bounds the start. It must
// not run concurrently with Stop, Kill or another Restart.
func (c *Cluster) Restart(ctx context.Context) error {
	if err := c.Halt(); err != nil {
		return fmt.Errorf("pgcluster restart: %w", err)
	}
	if err := c.Resume(ctx); err != nil {
		return fmt.Errorf("pgcluster restart: %w", err)
	}
	return nil
}

// Halt is the first half of Restart: the server is shut down, its data,
// port and settings kept for Resume. A halted standby receives no WAL: a
// primary that waits for it synchronously holds every COMMIT meanwhile.
func (c *Cluster) Halt() error {
	if c.cmd == nil {
		return errors.New("pgcluster halt: the server was never started")
	}
	if err := c.shutdown(); err != nil && !errors.Is(err, ErrKilled) {
		return fmt.Errorf("pgcluster halt: %w", err)
	}
	return nil
}

// Resume starts a halted server again, as it was. A standby resumes as a
// standby. ctx bounds the start.
func (c *Cluster) Resume(ctx context.Context) error {
	if err := c.launch(c.binDir, c.settings); err != nil {
		return fmt.Errorf("pgcluster resume: %w", err)
	}
	if err := c.waitReady(ctx); err != nil {
		return fmt.Errorf("pgcluster resume: %w%s", err, c.logTail())
	}
	return nil
}

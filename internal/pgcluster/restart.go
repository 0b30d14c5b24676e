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
	if c.cmd == nil {
		return errors.New("pgcluster restart: the server was never started")
	}
	err := c.shutdown()
	if err != nil && !errors.Is(err, ErrKilled) {
		return fmt.Errorf("pgcluster restart: %w", err)
	}
	if err := c.launch(c.binDir, c.settings); err != nil {
		return fmt.Errorf("pgcluster restart: %w", err)
	}
	if err := c.waitReady(ctx); err != nil {
		return fmt.Errorf("pgcluster restart: %w%s", err, c.logTail())
	}
	return nil
}

package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrServerExited is wrapped when postgres exits before accepting connections.
var ErrServerExited = errors.New("pgcluster: server exited before accepting connections")

// portAttempts bounds retries when a picked free port is taken before
// postgres binds it.
const portAttempts = 4

// startServer launches postgres and waits until it accepts connections.
func (c *Cluster) startServer(ctx context.Context, binDir string, opts Options) error {
	c.settings = opts.Settings
	for attempt := 1; ; attempt++ {
		c.port = opts.Port
		if c.port == 0 {
			p, err := FreePort()
			if err != nil {
				return fmt.Errorf("start server: %w", err)
			}
			c.port = p
		}
		err := c.launch(binDir, opts.Settings)
		if err == nil {
			err = c.waitReady(ctx)
		}
		if err == nil {
			return nil
		}
		tail := c.logTail()
		retry := opts.Port == 0 && attempt < portAttempts &&
			errors.Is(err, ErrServerExited) && strings.Contains(tail, "already in use")
		if !retry {
			return fmt.Errorf("start server on port %d: %w%s%s", c.port, err, c.runAs.reachHint(c.dir, err, tail), tail)
		}
	}
}

// launch starts the postmaster. It is deliberately not tied to ctx: ctx
// bounds startup only, and Stop owns the shutdown.
func (c *Cluster) launch(binDir string, settings map[string]string) error {
	args := []string{
		"-D", c.dataDir,
		"-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + c.sockDir,
	}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		args = append(args, "-c", k+"="+settings[k])
	}
	cmd := exec.Command(filepath.Join(binDir, "postgres"), args...)
	cmd.Dir = c.dir
	cmd.Env = childEnv()
	cmd.Stdout, cmd.Stderr = c.out, c.out
	cmd.SysProcAttr = sysProcAttr(c.runAs)
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("launch postgres: %w", err)
	}
	c.cmd = cmd
	c.exited = make(chan struct{})
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	return nil
}

// waitReady polls with a real connection, which, unlike a TCP dial, also
// proves recovery has finished and the postgres database is usable.
func (c *Cluster) waitReady(ctx context.Context) error {
	cfg, err := pgx.ParseConfig(c.URL())
	if err != nil {
		return fmt.Errorf("wait ready: %w", err)
	}
	// If postgres exits (say the port was busy) while a connect attempt is
	// stuck talking to whatever else owns the port, give up at once.
	exitCtx, cancelExit := context.WithCancel(ctx)
	defer cancelExit()
	go func() {
		select {
		case <-c.exited:
			cancelExit()
		case <-exitCtx.Done():
		}
	}()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		attemptCtx, cancel := context.WithTimeout(exitCtx, 2*time.Second)
		conn, err := pgx.ConnectConfig(attemptCtx, cfg)
		cancel()
		if err == nil {
			return conn.Close(ctx)
		}
		lastErr = err
		select {
		case <-c.exited:
			return fmt.Errorf("wait ready: %w: %w", ErrServerExited, c.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("wait ready: %w (last connect error: %w)", ctx.Err(), lastErr)
		case <-tick.C:
		}
	}
}

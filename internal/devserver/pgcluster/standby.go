package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// StandbyOptions configures StartStandby.
type StandbyOptions struct {
	// Name is the standby's application_name on the primary, and the name
	// of its replication slot; "" makes one up.
	Name string
	// Synchronous makes the primary wait for this standby to confirm each
	// commit's WAL is on its disk before acknowledging it
	// (synchronous_standby_names, synchronous_commit = on): an
	// acknowledged commit then survives the loss of the primary.
	Synchronous bool
	// Port is the standby's TCP port on 127.0.0.1; 0 picks a free one.
	// A failover test reuses the port of a primary it killed, so that one
	// multi-host URL names the pair for the whole run.
	Port int
	// Settings are extra server settings for the standby; a
	// primary_conninfo here wins over the one the base backup wrote.
	Settings map[string]string
	// Log receives pg_basebackup's and the server's output; nil writes
	// the standby's own postgres.log.
	Log io.Writer
}

// StartStandby starts a streaming-replication standby of c: a base backup
// of c (with a replication slot, so the primary keeps the WAL the standby
// has not received) into a new temporary directory, then a server that
// follows c. With opts.Synchronous, c waits for it on every commit from
// then on. ctx bounds the backup and the start.
func (c *Cluster) StartStandby(ctx context.Context, opts StandbyOptions) (_ *Cluster, err error) {
	if opts.Name == "" {
		opts.Name = fmt.Sprintf("standby_%d", time.Now().UnixNano())
	}
	if !validSlotName(opts.Name) {
		return nil, fmt.Errorf("pgcluster standby: name %q: want lower-case letters, digits and '_'", opts.Name)
	}
	dir, err := os.MkdirTemp("", "fencegw-pg-standby-")
	if err != nil {
		return nil, fmt.Errorf("pgcluster standby: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	dataDir := filepath.Join(dir, "data")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("pgcluster standby: %w", err)
	}
	if err := c.runAs.chown(dir, dataDir); err != nil {
		return nil, fmt.Errorf("pgcluster standby: %w", err)
	}
	if err := c.baseBackup(ctx, dataDir, opts); err != nil {
		return nil, fmt.Errorf("pgcluster standby: %w", err)
	}
	settings := map[string]string{
		// The walreceiver's application_name: what synchronous_standby_names
		// names.
		"cluster_name":      opts.Name,
		"primary_slot_name": opts.Name,
		"hot_standby":       "on",
	}
	for k, v := range opts.Settings {
		settings[k] = v
	}
	standby, err := Start(ctx, Options{BinDir: c.binDir, Dir: dir, Port: opts.Port, Settings: settings, Log: opts.Log})
	if err != nil {
		return nil, fmt.Errorf("pgcluster standby: %w", err)
	}
	standby.ownsDir = true // made here: Stop removes it
	if opts.Synchronous {
		if err := c.requireSynchronous(ctx, opts.Name); err != nil {
			_ = standby.Stop()
			return nil, fmt.Errorf("pgcluster standby: %w", err)
		}
	}
	return standby, nil
}

func validSlotName(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return s != "" && len(s) <= 63
}

// baseBackup copies c into dataDir with pg_basebackup, streaming the WAL
// written meanwhile, creating the replication slot, and writing the
// standby's recovery settings (standby.signal, primary_conninfo).
func (c *Cluster) baseBackup(ctx context.Context, dataDir string, opts StandbyOptions) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, "pg_basebackup"),
		"-D", dataDir,
		"-h", "127.0.0.1", "-p", strconv.Itoa(c.port), "-U", "postgres",
		"-X", "stream", "-R", "-C", "-S", opts.Name,
		"--checkpoint=fast", "--no-sync",
	)
	cmd.Dir = filepath.Dir(dataDir)
	cmd.Env = childEnv()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = sysProcAttr(c.runAs)
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pg_basebackup: %w: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

// requireSynchronous makes c wait for standby name on every commit, and
// returns once that standby is streaming synchronously.
func (c *Cluster) requireSynchronous(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, c.URL())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, sql := range []string{
		"ALTER SYSTEM SET synchronous_standby_names = " + quoteLiteral(name),
		"ALTER SYSTEM SET synchronous_commit = 'on'",
		"SELECT pg_reload_conf()",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var state string
		err := conn.QueryRow(ctx, "SELECT coalesce((SELECT sync_state FROM pg_stat_replication WHERE application_name = $1), '')", name).Scan(&state)
		if err != nil {
			return err
		}
		if state == "sync" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("standby %s never became synchronous (state %q): %w", name, state, ctx.Err())
		case <-tick.C:
		}
	}
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Kill ends the server at once with SIGKILL, as a crash or a lost machine
// would: no shutdown checkpoint, sessions cut, nothing more sent to
// standbys. Stop afterwards only cleans up.
func (c *Cluster) Kill() {
	if c.cmd == nil {
		return
	}
	select {
	case <-c.exited:
		return
	default:
	}
	pid := c.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGKILL)
	<-c.exited
	killGroup(pid) // its backends
}

// Promote ends c's recovery: the standby becomes a primary that accepts
// writes. It returns once it does.
func (c *Cluster) Promote(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.URL())
	if err != nil {
		return fmt.Errorf("pgcluster promote: %w", err)
	}
	defer conn.Close(context.Background())
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_promote(wait => true, wait_seconds => 60)").Scan(&ok); err != nil {
		return fmt.Errorf("pgcluster promote: %w", err)
	}
	if !ok {
		return errors.New("pgcluster promote: the standby did not finish recovery within 60 s")
	}
	return nil
}

// MultiHostURL is a connection URL naming every cluster given, for a
// client that must find the one that accepts writes (pgx tries the hosts
// in order; target_session_attrs=read-write skips standbys).
func MultiHostURL(db string, clusters ...*Cluster) string {
	hosts := make([]string, len(clusters))
	for i, c := range clusters {
		hosts[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port))
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User("postgres"),
		Host:     strings.Join(hosts, ","),
		Path:     "/" + db,
		RawQuery: "sslmode=disable&target_session_attrs=read-write",
	}
	return u.String()
}

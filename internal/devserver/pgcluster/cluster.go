package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
)

// Options configures Start. The zero value is a usable throwaway cluster.
type Options struct {
	// BinDir holds initdb and postgres; "" autodetects (see FindBinDir).
	BinDir string
	// Dir is the parent of the data directory, socket directory and default
	// log; "" creates a temporary one. Stop removes it only if Start created
	// it. An existing Dir/data with PG_VERSION is reused without initdb.
	Dir string
	// Port is the TCP port on 127.0.0.1; 0 picks a free one.
	Port int
	// Settings are extra server settings passed as -c key=value after the
	// built-in ones, so they take precedence.
	Settings map[string]string
	// Log receives initdb and server output; nil writes Dir/postgres.log.
	Log io.Writer
	// TLS, if set, turns ssl on with these files; Settings still win.
	TLS *TLS
}

// Cluster is a running PostgreSQL server owned by this process.
type Cluster struct {
	binDir  string
	dir     string
	ownsDir bool
	dataDir string
	sockDir string
	port    int
	runAs   *runAsUser

	out     io.Writer
	logFile *os.File    // set when we own the log file
	logPath string      // path of logFile, quoted in errors
	tail    *tailBuffer // set when output goes to the caller's Log

	settings map[string]string // launched with, for Restart

	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd.Wait returns
	waitErr error

	stopOnce sync.Once
	stopErr  error
}

// Start initialises (if needed) and starts a cluster, returning once it
// accepts connections. ctx bounds initdb and startup, not the server's life.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	binDir, err := FindBinDir(ctx, opts.BinDir)
	if err != nil {
		return nil, fmt.Errorf("pgcluster start: %w", err)
	}
	runAs, err := lookupRunAs()
	if err != nil {
		return nil, fmt.Errorf("pgcluster start: %w", err)
	}

	c := &Cluster{binDir: binDir, dir: opts.Dir, runAs: runAs}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "fencegw-pg-"); err != nil {
			return nil, fmt.Errorf("pgcluster start: %w", err)
		}
		c.ownsDir = true
	}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	if err := c.prepareDirs(); err != nil {
		return nil, fmt.Errorf("pgcluster start: %w", err)
	}
	if err := c.openLog(opts.Log); err != nil {
		return nil, fmt.Errorf("pgcluster start: %w", err)
	}

	if _, statErr := os.Stat(filepath.Join(c.dataDir, "PG_VERSION")); statErr != nil {
		if err := c.initdb(ctx, binDir); err != nil {
			return nil, fmt.Errorf("pgcluster start: %w", err)
		}
	}
	if opts.TLS != nil {
		settings, err := c.installTLS(opts.TLS)
		if err != nil {
			return nil, fmt.Errorf("pgcluster start: %w", err)
		}
		maps.Copy(settings, opts.Settings)
		opts.Settings = settings
	}
	if err := c.startServer(ctx, binDir, opts); err != nil {
		return nil, fmt.Errorf("pgcluster start: %w", err)
	}
	return c, nil
}

// prepareDirs creates the data and socket directories owned by whoever will
// run postgres; the server insists on owning its data directory.
func (c *Cluster) prepareDirs() error {
	c.dataDir = filepath.Join(c.dir, "data")
	c.sockDir = filepath.Join(c.dir, "sock")
	var owned []string
	if c.ownsDir {
		owned = append(owned, c.dir)
	}
	for _, d := range []string{c.dataDir, c.sockDir} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("prepare dirs: %w", err)
		}
		owned = append(owned, d)
	}
	if err := c.runAs.chown(owned...); err != nil {
		return fmt.Errorf("prepare dirs: %w", err)
	}
	return nil
}

func (c *Cluster) openLog(w io.Writer) error {
	if w != nil {
		c.tail = &tailBuffer{}
		c.out = io.MultiWriter(w, c.tail)
		return nil
	}
	c.logPath = filepath.Join(c.dir, "postgres.log")
	f, err := os.OpenFile(c.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	// Passing the *os.File straight to the children lets them write it
	// without a copying goroutine in this process.
	c.logFile, c.out = f, f
	return nil
}

// logTail describes recent output for an error message.
func (c *Cluster) logTail() string {
	if c.logFile != nil {
		return fmt.Sprintf("; log %s ends with:\n%s", c.logPath, fileTail(c.logPath))
	}
	if c.tail != nil {
		return "; output ends with:\n" + c.tail.String()
	}
	return ""
}

// URL is the superuser connection URL for the postgres database.
func (c *Cluster) URL() string { return c.URLFor("postgres") }

// URLFor is the superuser connection URL for database db.
func (c *Cluster) URLFor(db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User("postgres"),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Port is the TCP port the server listens on at 127.0.0.1.
func (c *Cluster) Port() int { return c.port }

// Address is the server's host:port on 127.0.0.1.
func (c *Cluster) Address() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)) }

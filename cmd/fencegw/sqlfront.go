package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgpassfile"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/node"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/sqlfront"
)

// sqlFrontFlags are serve's and dev's flags of the SQL front
// (docs/sql-front.md).
type sqlFrontFlags struct {
	Listen                    string
	MaxConnections, PerClient int
	MaxTransactions           int
	QueueTimeout              time.Duration
	IdleInTxTimeout           time.Duration
	IdleTimeout, StmtTimeout  time.Duration
	MaxMessage                int
}

func (f *sqlFrontFlags) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.Listen, "pg-listen", "", "serve the SQL front, PostgreSQL's wire protocol, on this address (e.g. 127.0.0.1:6432); off by default")
	fs.IntVar(&f.MaxConnections, "pg-max-connections", sqlfront.DefaultMaxConnections, "sessions the SQL front serves at once, each a PostgreSQL connection of its own")
	fs.IntVar(&f.PerClient, "pg-max-connections-per-client", 0, "sessions one client may have on the SQL front (0: a quarter of --pg-max-connections)")
	fs.IntVar(&f.MaxTransactions, "pg-max-transactions", 0, "sessions of the SQL front with work in PostgreSQL at once (a transaction, or a statement outside one); more wait for a turn, shared fairly between clients (0: half of --pg-max-connections)")
	fs.DurationVar(&f.QueueTimeout, "pg-queue-timeout", sqlfront.DefaultQueueTimeout, "how long a statement of the SQL front waits for a turn before it is refused (53000), nothing of it sent")
	fs.DurationVar(&f.IdleInTxTimeout, "pg-idle-in-transaction-timeout", time.Minute, "end a session of the SQL front that waits this long for its client in a transaction, whose fence rows keep the next holder waiting (0: never)")
	fs.DurationVar(&f.IdleTimeout, "pg-idle-timeout", 0, "end a session of the SQL front that waits this long for its client outside a transaction (0: never)")
	fs.DurationVar(&f.StmtTimeout, "pg-statement-timeout", 0, "cancel a statement of the SQL front that runs this long (0: never; PostgreSQL's statement_timeout applies too)")
	fs.IntVar(&f.MaxMessage, "pg-max-message", sqlfront.DefaultMaxMessageBytes, "largest message a client of the SQL front may send, in bytes")
}

func (f *sqlFrontFlags) check() error {
	if f.MaxConnections < 0 || f.PerClient < 0 || f.MaxTransactions < 0 || f.QueueTimeout < 0 || f.IdleInTxTimeout < 0 || f.IdleTimeout < 0 || f.StmtTimeout < 0 || f.MaxMessage < 0 {
		return fmt.Errorf("%w: the --pg-* limits must not be negative", errUsage)
	}
	return nil
}

// metrics are the front's metrics, served on /metrics beside the
// gateway's; nil, none, when the front is off.
func (f *sqlFrontFlags) metrics() *sqlfront.Metrics {
	if f.Listen == "" {
		return nil
	}
	return sqlfront.NewMetrics()
}

// serveSQLFront serves the SQL front on f.Listen, if set, until stop is
// called, which ends every session (PostgreSQL rolls back what each had
// open). onBound, if set, gets the address it serves.
func serveSQLFront(f sqlFrontFlags, metrics *sqlfront.Metrics, databaseURL string, pool *pgxpool.Pool, auth *authority.Etcd, pol *policy.Policy, nd *node.Node,
	creds *serveCredentials, log *slog.Logger) (addr string, stop func(), err error) {
	if f.Listen == "" {
		return "", func() {}, nil
	}
	backend, err := pgconn.ParseConfig(databaseURL)
	if err != nil {
		return "", nil, fmt.Errorf("--pg-listen: %w", err)
	}
	cfg := sqlfront.Config{
		Policy: pol, Authority: auth, Pool: pool, Backend: backend, Password: passfileLookup(backend, log),
		Audit: nd.Audit, Logger: log, MaxConnections: f.MaxConnections, MaxClientConnections: f.PerClient,
		MaxTransactions: f.MaxTransactions, QueueTimeout: f.QueueTimeout,
		IdleInTransactionTimeout: f.IdleInTxTimeout, IdleTimeout: f.IdleTimeout, StatementTimeout: f.StmtTimeout, MaxMessageBytes: f.MaxMessage,
		Metrics: metrics,
	}
	if creds.tls != nil {
		cfg.TLS = creds.tls.Config()
		if creds.clientCA {
			cfg.ClientCAs = creds.tls.ClientCAs
		}
	} else {
		log.Warn("the SQL front has no TLS (--tls-cert-file): it takes passwords from this host only")
	}
	srv, err := sqlfront.New(cfg)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		return "", nil, fmt.Errorf("--pg-listen: %w", err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); !errors.Is(err, sqlfront.ErrServerClosed) {
			log.Error("the SQL front stopped", "error", err.Error())
		}
	}()
	log.Info("fencegw serving the SQL front", "addr", ln.Addr().String(), "max_connections", f.MaxConnections)
	return ln.Addr().String(), sync.OnceFunc(func() { srv.Close(); <-served }), nil
}

// passfileLookup is how a session of the front gets the password of its
// client's sql_role: from the password file libpq reads (PGPASSFILE, or
// ~/.pgpass), for the database URL's host, port and database; none if
// there is no file or no line (certificate, trust or peer
// authentication, as pg_hba.conf says).
func passfileLookup(c *pgconn.Config, log *slog.Logger) func(role string) string {
	path := os.Getenv("PGPASSFILE")
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil
		}
		path = filepath.Join(home, ".pgpass")
	}
	pf, err := pgpassfile.ReadPassfile(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			log.Warn("the SQL front cannot read the password file: its sessions log in without passwords", "file", path, "error", err.Error())
		}
		return nil
	}
	return func(role string) string {
		return pf.FindPassword(c.Host, strconv.Itoa(int(c.Port)), c.Database, role)
	}
}

package main

import (
	"flag"
	"fmt"
	"github.com/fencegw/fencegw/authority"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/fencegw/fencegw/gateway"
)

// serveConfig is everything `fencegw serve` reads from flags and the
// environment. Flags win over environment variables.
type serveConfig struct {
	Listen          string
	DatabaseURL     string
	EtcdEndpoints   []string
	PolicyPath      string
	MaxBodyBytes    int64
	WriteTimeout    time.Duration
	MaxInFlight     int
	MaxLeases       int64 // per client
	MaxLeaseCalls   int
	GroupCommit     bool
	WriteTxs        int // coalescing resources' transactions in flight; 0: the default
	ShutdownTimeout time.Duration
	LogFormat       string
	DebugListen     string // pprof, off when empty

	IdempotencyRetention time.Duration
	AuthorityCheck       time.Duration
	UnsafeNoFence        bool
}

// bind registers the flags shared by serve and dev on fs.
func (c *serveConfig) bind(fs *flag.FlagSet, listenDefault string) {
	fs.StringVar(&c.Listen, "listen", envOr(listenDefault, "FENCEGW_LISTEN"), "HTTP listen address (FENCEGW_LISTEN)")
	fs.Int64Var(&c.MaxBodyBytes, "max-body", gateway.DefaultMaxBodyBytes, "largest request body in bytes")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", gateway.DefaultWriteTimeout, "bound on one write's PostgreSQL work")
	fs.IntVar(&c.MaxInFlight, "max-in-flight", 0, "writes past the admission gate at once; more wait for a turn, at most --write-timeout (0: eight per pooled connection, at least 64)")
	fs.Int64Var(&c.MaxLeases, "max-leases-per-client", gateway.DefaultMaxLeasesPerClient, "leases one client may hold or wait for at once, counted across replicas (all callers are one client without clients in the policy)")
	fs.IntVar(&c.MaxLeaseCalls, "max-lease-requests", gateway.DefaultMaxLeaseRequests, "acquisitions and observations this gateway serves at once (a quarter each client, with clients); more get 503")
	fs.BoolVar(&c.GroupCommit, "group-commit", true, "commit the writes of coalescing resources that wait for a connection together, across resources (a resource's group_commit wins)")
	fs.IntVar(&c.WriteTxs, "max-write-transactions", 0, "coalescing resources' transactions in flight at once; writes that find them busy wait in line, and with group commit share the next (0: with group commit one per core (GOMAXPROCS, at least 2), else the pool's size)")
	fs.DurationVar(&c.IdempotencyRetention, "idempotency-retention", gateway.DefaultIdempotencyRetention, "how long a completed Idempotency-Key is replayed")
	fs.DurationVar(&c.AuthorityCheck, "authority-check", authority.DefaultCheckEvery, "how often etcd is compared with PostgreSQL's record of it (rollback detection)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "how long SIGTERM waits for requests in flight")
	fs.StringVar(&c.DebugListen, "debug-listen", envOr("", "FENCEGW_DEBUG_LISTEN"), "serve Go's profiler (/debug/pprof/) on this address, apart from the API; off by default (FENCEGW_DEBUG_LISTEN)")
	fs.StringVar(&c.LogFormat, "log-format", envOr("json", "FENCEGW_LOG_FORMAT"), "log format: json or text (FENCEGW_LOG_FORMAT)")
}

func (c *serveConfig) bindBackends(fs *flag.FlagSet) {
	fs.StringVar(&c.DatabaseURL, "database-url", envOr("", "FENCEGW_DATABASE_URL", "DATABASE_URL"), "PostgreSQL URL (FENCEGW_DATABASE_URL or DATABASE_URL)")
	c.EtcdEndpoints = splitList(envOr("127.0.0.1:2379", "FENCEGW_ETCD_ENDPOINTS"))
	fs.Func("etcd", "comma-separated etcd endpoints (FENCEGW_ETCD_ENDPOINTS; default 127.0.0.1:2379)", func(s string) error {
		c.EtcdEndpoints = splitList(s)
		return nil
	})
	fs.StringVar(&c.PolicyPath, "policy", envOr("", "FENCEGW_POLICY"), "policy file (FENCEGW_POLICY)")
}

func (c *serveConfig) check() error {
	switch {
	case c.DatabaseURL == "":
		return fmt.Errorf("%w: no database: set --database-url, FENCEGW_DATABASE_URL or DATABASE_URL", errUsage)
	case c.PolicyPath == "":
		return fmt.Errorf("%w: no policy: set --policy or FENCEGW_POLICY", errUsage)
	case len(c.EtcdEndpoints) == 0:
		return fmt.Errorf("%w: no etcd endpoints: set --etcd or FENCEGW_ETCD_ENDPOINTS", errUsage)
	case c.MaxInFlight < 0 || c.WriteTxs < 0:
		return fmt.Errorf("%w: --max-in-flight and --max-write-transactions must not be negative", errUsage)
	case c.MaxLeases < 0 || c.MaxLeaseCalls < 0:
		return fmt.Errorf("%w: --max-leases-per-client and --max-lease-requests must not be negative", errUsage)
	case c.MaxBodyBytes < 1:
		return fmt.Errorf("%w: --max-body must be positive", errUsage)
	case c.WriteTimeout <= 0 || c.ShutdownTimeout <= 0 || c.IdempotencyRetention <= 0 || c.AuthorityCheck <= 0:
		return fmt.Errorf("%w: timeouts must be positive", errUsage)
	}
	return nil
}

func (c *serveConfig) logger() *slog.Logger {
	if c.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, nil))
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseInterspersed parses fs's flags wherever they stand among args, so
// that `fencegw epoch show --etcd X` means what `fencegw epoch --etcd X
// show` does; fs.Args() then holds the other words, in order. A "--" ends
// the flags as usual.
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	var words []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			words = append(words, rest...) // after "--": words, not flags
			break
		}
		words = append(words, rest[0])
		args = rest[1:]
	}
	return fs.Parse(append([]string{"--"}, words...))
}

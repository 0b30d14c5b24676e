package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/node"
)

// serveConfig is everything `fencegw serve` reads from flags and the
// environment. Flags win over environment variables.
type serveConfig struct {
	Listen          string
	DatabaseURL     string
	EtcdEndpoints   []string
	EtcdAccess      etcdAccess // TLS and user
	PolicyPath      string
	MaxBodyBytes    int64
	WriteTimeout    time.Duration
	MaxInFlight     int
	MaxConnections  int   // the API listener's; 0: from the fd limit (maxconns.go)
	MaxLeases       int64 // per client
	MaxLeaseCalls   int
	MaxWatches      int // watch streams at once
	GroupCommit     bool
	WriteTxs        int // coalescing resources' transactions in flight; 0: the default
	ShutdownDelay   time.Duration
	ShutdownTimeout time.Duration
	LogFormat       string
	LogLevel        string
	DebugListen     string // pprof, off when empty
	TrustedProxies  cidrs  // --trusted-proxies, read by trustedProxies
	TLS             tlsFlags
	JWT             jwtFlags
	KEK             kekFlags
	// TortureClock, for fencegw torture only, is the clock page the
	// hold records' wall clock reads (tortureclock.go); "": the real one.
	TortureClock string
	SQLFront     sqlFrontFlags

	IdempotencyRetention time.Duration
	AuthorityCheck       time.Duration
	PruneEvery           time.Duration // 0: fence rows are never pruned
	UnsafeNoFence        bool
	// UnsafeIgnoreCommitWarnings: torture's control of a failover losing
	// a commit PostgreSQL warned about.
	UnsafeIgnoreCommitWarnings bool

	// hurry, closed on a second SIGTERM or interrupt, cuts the shutdown
	// delay short.
	hurry <-chan struct{}
	// command is the command running serve ("dev"), for its errors.
	command string
	// logOut, if set, receives the log instead of stderr (tests).
	logOut io.Writer
	// frontBound, if set, gets the address the SQL front serves.
	frontBound func(addr string)
}

// flagDefaults are the defaults in which serve and dev differ: dev is run
// by a person at a terminal, who reads text and wants Ctrl-C to stop it.
type flagDefaults struct {
	logFormat     string
	shutdownDelay time.Duration
}

var (
	serveDefaults = flagDefaults{logFormat: "json", shutdownDelay: 5 * time.Second}
	devDefaults   = flagDefaults{logFormat: "text"}
)

// bind registers the flags shared by serve and dev on cmd; applyEnv then
// reads each from its FENCEGW_ variable.
func (c *serveConfig) bind(cmd *cobra.Command, d flagDefaults) {
	fs := cmd.Flags()
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8080", "HTTP listen address")
	fs.Int64Var(&c.MaxBodyBytes, "max-body", gateway.DefaultMaxBodyBytes, "largest request body in bytes")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", gateway.DefaultWriteTimeout, "bound on one write's PostgreSQL work")
	fs.IntVar(&c.MaxInFlight, "max-in-flight", 0, "writes past the admission gate at once; more wait for a turn, at most --write-timeout (0: eight per pooled connection, at least 64)")
	fs.Int64Var(&c.MaxLeases, "max-leases-per-client", gateway.DefaultMaxLeasesPerClient, "leases one client may hold or wait for at once, counted across replicas (all callers are one client without clients in the policy)")
	fs.IntVar(&c.MaxLeaseCalls, "max-lease-requests", gateway.DefaultMaxLeaseRequests, "acquisitions and observations this gateway serves at once (a quarter each client, with clients); more get 503")
	fs.IntVar(&c.MaxWatches, "max-watches", gateway.DefaultMaxWatches, "watch streams this gateway serves at once (a quarter each client, with clients); more get 503")
	fs.IntVar(&c.MaxConnections, "max-connections", 0, "client connections open at once on the API listener, idle keep-alive ones included; past it a connection is answered 503 and closed (closed before the handshake with TLS) (0: the open-file limit less a reserve for PostgreSQL, etcd and the ops listener: a quarter of it, at most 1,024)")
	fs.BoolVar(&c.GroupCommit, "group-commit", true, "commit the writes of coalescing resources that wait for a connection together, across resources (a resource's group_commit wins; --group-commit=false turns it off)")
	fs.IntVar(&c.WriteTxs, "max-write-transactions", 0, "coalescing resources' transactions in flight at most; writes that find them busy wait in line. With group commit those share the next, and a transaction beyond the first starts only when the line has not moved for 20 ms (a stuck write) (0: with group commit one per core (GOMAXPROCS, at least 2), else the pool's size)")
	fs.DurationVar(&c.IdempotencyRetention, "idempotency-retention", gateway.DefaultIdempotencyRetention, "how long a completed Idempotency-Key is replayed")
	fs.DurationVar(&c.AuthorityCheck, "authority-check", authority.DefaultCheckEvery, "how often etcd is compared with PostgreSQL's record of it (rollback detection)")
	fs.DurationVar(&c.PruneEvery, "prune-every", node.DefaultPruneEvery, "how often the janitor raises the fence floor below every live lease's token and deletes the fence rows at or below it, and the etcd transitions keys of idle locks (0: never)")
	fs.DurationVar(&c.ShutdownDelay, "shutdown-delay", d.shutdownDelay, "on SIGTERM, how long /readyz answers 503 while the listener still serves, so load balancers stop sending before it closes; a second SIGTERM cuts it short")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "after the delay, how long shutdown waits for requests in flight")
	fs.StringVar(&c.DebugListen, "debug-listen", "", "serve Go's profiler (/debug/pprof/) on this address, apart from the API; off by default")
	c.TLS.bind(cmd)
	c.JWT.bind(cmd)
	c.KEK.bind(cmd, fs)
	c.SQLFront.bind(cmd)
	fs.StringVar(&c.LogFormat, "log-format", d.logFormat, "log format: json or text")
	fs.StringVar(&c.LogLevel, "log-level", "info", "least severe log level written: debug, info, warn or error")
	bindTrustedProxies(fs, &c.TrustedProxies)
	completeWords(cmd, "log-format", "json", "text")
	completeWords(cmd, "log-level", "debug", "info", "warn", "error")
}

// bindUnsafe registers the flags that switch a safety property off, for
// the control runs that must show it failing: torture's, and the
// examples' stories told without the fence on dev.
func (c *serveConfig) bindUnsafe(fs *pflag.FlagSet) {
	fs.BoolVar(&c.UnsafeNoFence, "unsafe-no-fence", false, "DANGER, for control runs only (fencegw torture, the examples' stories without the fence): accept every token, stale or not")
	fs.BoolVar(&c.UnsafeIgnoreCommitWarnings, "unsafe-ignore-commit-warnings", false, "DANGER, for the control runs of fencegw torture only: answer 200 for a COMMIT PostgreSQL warned about (a cancelled wait for synchronous replication), which a failover can lose")
}

// completeWords makes the shell complete flag's value from words.
func completeWords(cmd *cobra.Command, flag string, words ...string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(words, cobra.ShellCompDirectiveNoFileComp))
}

// completeFiles makes the shell complete flag's value from files with
// these extensions (folders when none are given).
func completeFiles(cmd *cobra.Command, flag string, exts ...string) {
	directive := cobra.ShellCompDirectiveFilterFileExt
	if len(exts) == 0 {
		directive = cobra.ShellCompDirectiveFilterDirs
	}
	_ = cmd.RegisterFlagCompletionFunc(flag, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return exts, directive
	})
}

// backends names the flags a command takes for what it talks to.
type backends struct{ database, etcd, policy bool }

var (
	allBackends     = backends{database: true, etcd: true, policy: true}
	databaseAndEtcd = backends{database: true, etcd: true}
	databaseAndPol  = backends{database: true, policy: true}
)

// bindBackends registers on fs (cmd's own flags, or the persistent flags
// of a command with verbs) the flags of the backends cmd uses, and no
// others: a flag a command would ignore must not show in its help. The
// defaults come from the environment here as well as in applyEnv, so the
// commands other than serve read the same variables.
func (c *serveConfig) bindBackends(cmd *cobra.Command, fs *pflag.FlagSet, which backends) {
	if which.database {
		bindDatabaseURL(fs, &c.DatabaseURL)
	}
	if which.etcd {
		c.EtcdEndpoints = splitList(envOr("127.0.0.1:2379", "FENCEGW_ETCD", "FENCEGW_ETCD_ENDPOINTS", "ETCDCTL_ENDPOINTS"))
		fs.Var((*endpoints)(&c.EtcdEndpoints), "etcd", "comma-separated etcd endpoints, HOST:PORT or URLs (FENCEGW_ETCD, FENCEGW_ETCD_ENDPOINTS, ETCDCTL_ENDPOINTS)")
		showDefault(fs, "etcd", "127.0.0.1:2379")
		bindEtcdAccess(cmd, fs, &c.EtcdAccess, true)
	}
	if which.policy {
		fs.StringVar(&c.PolicyPath, "policy", envOr("", "FENCEGW_POLICY"), "policy file (FENCEGW_POLICY)")
		showDefault(fs, "policy", "")
		completeFiles(cmd, "policy", "yaml", "yml")
	}
}

// bindDatabaseURL registers --database-url, its default from the
// environment but not shown in help: a URL may carry a password.
func bindDatabaseURL(fs *pflag.FlagSet, url *string) {
	fs.StringVar(url, "database-url", envOr("", "FENCEGW_DATABASE_URL", "DATABASE_URL"), "PostgreSQL URL (FENCEGW_DATABASE_URL, DATABASE_URL)")
	showDefault(fs, "database-url", "")
}

// showDefault makes help show def as flag's default, not the value its
// environment variable gave it: that is not a default, and may carry a
// password.
func showDefault(fs *pflag.FlagSet, flag, def string) {
	fs.Lookup(flag).DefValue = def
}

// check refuses a configuration serve cannot run with.
func (c *serveConfig) check() error {
	switch {
	case c.DatabaseURL == "":
		return fmt.Errorf("%w: no database: set --database-url, FENCEGW_DATABASE_URL or DATABASE_URL", errUsage)
	case c.PolicyPath == "":
		return fmt.Errorf("%w: no policy: set --policy or FENCEGW_POLICY", errUsage)
	case len(c.EtcdEndpoints) == 0:
		return fmt.Errorf("%w: no etcd endpoints: set --etcd or FENCEGW_ETCD", errUsage)
	}
	return c.checkValues()
}

// checkValues refuses flag values out of range: the checks dev shares.
func (c *serveConfig) checkValues() error {
	if _, err := trustedProxies(c.TrustedProxies); err != nil {
		return err
	}
	switch {
	case c.MaxInFlight < 0 || c.WriteTxs < 0:
		return fmt.Errorf("%w: --max-in-flight and --max-write-transactions must not be negative", errUsage)
	case c.MaxConnections < 0:
		return fmt.Errorf("%w: --max-connections must not be negative (0: from the open-file limit)", errUsage)
	case c.MaxLeases < 0 || c.MaxLeaseCalls < 0 || c.MaxWatches < 0:
		return fmt.Errorf("%w: --max-leases-per-client, --max-lease-requests and --max-watches must not be negative", errUsage)
	case c.MaxBodyBytes < 1:
		return fmt.Errorf("%w: --max-body must be positive", errUsage)
	case c.LogFormat != "json" && c.LogFormat != "text":
		return fmt.Errorf("%w: --log-format %q: want json or text", errUsage, c.LogFormat)
	case logLevel(c.LogLevel) == nil:
		return fmt.Errorf("%w: --log-level %q: want debug, info, warn or error", errUsage, c.LogLevel)
	case c.ShutdownDelay < 0:
		return fmt.Errorf("%w: --shutdown-delay must not be negative", errUsage)
	case c.PruneEvery < 0:
		return fmt.Errorf("%w: --prune-every must not be negative (0 turns pruning off)", errUsage)
	case c.WriteTimeout <= 0 || c.ShutdownTimeout <= 0 || c.IdempotencyRetention <= 0 || c.AuthorityCheck <= 0:
		return fmt.Errorf("%w: timeouts must be positive", errUsage)
	}
	if err := c.TLS.check(); err != nil {
		return err
	}
	if err := c.SQLFront.check(); err != nil {
		return err
	}
	return c.JWT.check()
}

func (c *serveConfig) logger() *slog.Logger {
	opts := &slog.HandlerOptions{Level: logLevel(c.LogLevel)}
	if opts.Level == nil {
		opts.Level = slog.LevelInfo
	}
	var w io.Writer = os.Stderr
	if c.logOut != nil {
		w = c.logOut
	}
	if c.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// logLevel is the level named s, or nil if s names none.
func logLevel(s string) slog.Leveler {
	var l slog.Level
	if s == "" || l.UnmarshalText([]byte(s)) != nil {
		return nil
	}
	return l
}

// envAliases are environment variables older than the FENCEGW_<FLAG>
// rule, still read after it.
var envAliases = map[string][]string{
	"database-url": {"DATABASE_URL"},
	"etcd":         {"FENCEGW_ETCD_ENDPOINTS", etcdctlEnv["etcd"]},
	"etcd-cacert":  {etcdctlEnv["etcd-cacert"]},
	"etcd-cert":    {etcdctlEnv["etcd-cert"]},
	"etcd-key":     {etcdctlEnv["etcd-key"]},
}

// envExempt are flags no environment variable sets: turning the fence off
// takes a word on the command line.
// Nor do --help and --version, which are questions, not settings.
// --adopt-etcd, which halts the other gateways of dev's database, neither.
var envExempt = map[string]bool{"unsafe-no-fence": true, "unsafe-ignore-commit-warnings": true, "adopt-etcd": true, "help": true, "version": true}

// envName is the environment variable of a flag: --max-body is
// FENCEGW_MAX_BODY.
func envName(flagName string) string {
	return "FENCEGW_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyEnv sets every flag of fs the command line left unset from its
// environment variable, if that is set; the command line wins. A value
// the flag refuses is a usage error naming the variable.
func applyEnv(fs *pflag.FlagSet) error {
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { onCommandLine[f.Name] = true })
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || onCommandLine[f.Name] || envExempt[f.Name] {
			return
		}
		for _, name := range append([]string{envName(f.Name)}, envAliases[f.Name]...) {
			if v := os.Getenv(name); v != "" {
				if fs.Set(f.Name, v) != nil {
					err = fmt.Errorf("%w: %s=%q: want %s", errUsage, name, v, valueKind(f))
				}
				return
			}
		}
	})
	return err
}

// endpoints is a flag's list of HOST:PORT, comma-separated.
type endpoints []string

func (e *endpoints) Set(s string) error {
	if *e = splitList(s); len(*e) == 0 {
		return fmt.Errorf("no endpoint in %q: want host:port[,host:port]", s)
	}
	return nil
}
func (e *endpoints) String() string { return strings.Join(*e, ",") }
func (e *endpoints) Type() string   { return "host:port,..." }

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/devserver/etcdserver"
	"github.com/fencegw/fencegw/internal/devserver/pgcluster"
	"github.com/fencegw/fencegw/internal/harness/bench"
	"github.com/fencegw/fencegw/internal/harness/tsclient"
)

func benchCommand() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench [flags]",
		Short: "measure fenced writes direct via pgx, through the gateway, and with pgbench",
		Long: `Measures fenced writes three ways on the same database, for each number of
clients and distribution: direct pgx running the gateway's SQL, the gateway
over HTTP, and pgbench running the fenced write as one statement (when the
PostgreSQL installation has it). Reports throughput, latency percentiles,
the ratios, allocations per write and RSS. Without --database-url (or
FENCEGW_DATABASE_URL, DATABASE_URL) it starts a throwaway PostgreSQL. See
BENCHMARKS.md.`,
		Example: `  fencegw bench --database-url postgres://postgres@127.0.0.1/bench --clients 1,16,64 --duration 5s`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.clientsSet, o.distsSet = cmd.Flags().Changed("clients"), cmd.Flags().Changed("dist")
			return runBench(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	cfg := &o.cfg
	*cfg = bench.Config{Progress: os.Stderr, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	fs.StringVar(&o.clients, "clients", "1,4,16,64", "comma-separated client counts")
	fs.StringVar(&o.dists, "dist", "uniform,hot,zipf", "comma-separated distributions over the 10,000 accounts: uniform, hot (account 1 only), zipf")
	fs.DurationVar(&cfg.Duration, "duration", 3*time.Second, "measured time per path and cell")
	fs.DurationVar(&cfg.Warmup, "warmup", 500*time.Millisecond, "unmeasured time before each measurement")
	fs.BoolVar(&cfg.NoPgbench, "no-pgbench", false, "skip the yardstick: pgbench running the same fenced write as one statement, a connection per client")
	fs.Int64Var(&cfg.MinWrites, "min-writes", 0, "measure at least this many writes per path and cell, running past --duration if needed")
	fs.Float64Var(&cfg.Rate, "rate", 0, "open loop: send this many writes per second, all clients together, on a fixed schedule; a write held up by the one before is timed from when it was due (0: closed loop)")
	fs.IntVar(&cfg.PoolMaxConns, "pool-max-conns", 0, "pgx pool size on both paths (0: min(4×GOMAXPROCS, clients))")
	fs.Int64Var(&cfg.FenceRows, "fence-rows", 0, "before the first cell, top fencegw.fences up to this many rows of resources the run does not write (kept for the next run), to measure writes beside the state past work left")
	fs.Int64Var(&cfg.IdempotencyRows, "idempotency-rows", 0, "before the first cell, top fencegw.idempotency_keys up to this many stored answers of a client the run is not (kept for the next run)")
	bindDatabaseURL(fs, &cfg.DatabaseURL)
	fs.StringVar(&cfg.GatewayURL, "gateway", "", "drive this running gateway (loopback only) instead of one in process; needs --database-url and --etcd, the gateway's")
	fs.StringVar(&cfg.Dir, "bench", "testdata/bench", "folder with the bench's policy.yaml and migrations/")
	fs.Var((*endpoints)(&cfg.EtcdEndpoints), "etcd", "comma-separated endpoints of a running etcd for the in-process gateway (default: an embedded one, whose background work then counts in the process's allocations and RSS)")
	bindEtcdAccess(cmd, fs, &o.etcdAccess, false) // never from the environment: the embedded etcd would not want them
	fs.StringVar(&cfg.KEKFile, "token-kek-file", "", "with --etcd or --gateway: the gateways' KEK file, which opens the signing keys there (required; the embedded etcd's keys are sealed under a KEK of the run's own)")
	fs.IntVar(&cfg.WriteTransactions, "max-write-transactions", 0, "the in-process gateway's transactions of coalescing resources in flight at once (0: its default)")
	fs.BoolVar(&cfg.NoGroupCommit, "no-group-commit", false, "turn group commit across resources off in the in-process gateway, whatever the policy says")
	fs.BoolVar(&cfg.NoCoalesce, "no-coalesce", false, "turn hot-key coalescing off in the in-process gateway, whatever the policy says")
	fs.IntVar(&cfg.Replicas, "replicas", 0, "run the gateway as this many fencegw serve processes on loopback (this binary), started for each cell, on one PostgreSQL and one etcd, the load's connections spread over them round-robin (0: the gateway in this process)")
	fs.IntVar(&cfg.IdleConnections, "idle-connections", 0, "in each cell, before measuring, open this many keep-alive connections to the gateway (one GET /livez each, then idle until the cell ends) and report the gateway's RSS before and with them; raises this process's open-file limit to its hard limit")
	fs.IntVar(&cfg.GatewayPID, "gateway-pid", 0, "the process of --gateway, whose RSS the report gives (without it, none)")
	fs.BoolVar(&cfg.Wrk, "wrk", false, "also load each cell's gateway with wrk (an outside load generator, on $PATH), as many connections as clients, the same accounts, tokens and bodies, and report its figures beside the bench client's")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.BoolVar(&o.asJSON, "json", false, "print the report as one JSON document")
	fs.BoolVar(&o.clientLibraries, "client-libraries", false, "measure fenced writes through each client library (Go, Python, TypeScript) beside its language's bare HTTP call of the same request, against one gateway (--replicas defaults to 1: a process of its own); --clients defaults to 1,16; needs python3, node and npm, and runs from the repository's root")
	fs.IntVar(&o.rounds, "rounds", 5, "with --client-libraries: runs of each driver per writer count, interleaved, --duration split among them")
	fs.BoolVar(&o.leases, "leases", false, "measure lock cycles instead of writes: acquire, release, and acquire, one fenced write, release, through the gateway's lease API beside etcd's own Session and Mutex on the same etcd; --clients defaults to 1,16,64 and --dist to uniform,hot (distinct resources, and one resource handed from holder to holder)")
	completeWords(cmd, "dist", "uniform", "hot", "zipf", "uniform,hot,zipf")
	completeFiles(cmd, "bench")
	return cmd
}

// benchOptions are bench's flags: the run's configuration and what the
// command does around it.
type benchOptions struct {
	cfg            bench.Config
	clients, dists string
	cpuProfile     string
	asJSON         bool
	leases         bool // lock cycles instead of writes
	// clientLibraries: writes through each client library instead.
	clientLibraries bool
	rounds          int // of --client-libraries
	// clientsSet, distsSet: the flags were given, not defaulted.
	clientsSet, distsSet bool
	etcdAccess           etcdAccess // TLS and user of --etcd
}

// runBench serves `fencegw bench`: the same fenced writes direct through
// pgx and through the gateway, on the setup of `fencegw dev` unless told
// otherwise. Nothing it starts outlives it.
func runBench(ctx context.Context, o benchOptions, out io.Writer) error {
	cfg := o.cfg
	var err error
	if o.leases && !o.clientsSet {
		o.clients = "1,16,64"
	}
	if o.clientLibraries && !o.clientsSet {
		o.clients = "1,16"
	}
	if o.clientLibraries && cfg.Replicas == 0 && cfg.GatewayURL == "" {
		cfg.Replicas = 1
	}
	if o.leases && !o.distsSet {
		o.dists = "uniform,hot"
	}
	if cfg.Clients, err = bench.ParseClients(o.clients); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if cfg.Dists, err = bench.ParseDists(o.dists); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if cfg.GatewayURL != "" && (cfg.DatabaseURL == "" || len(cfg.EtcdEndpoints) == 0) {
		return fmt.Errorf("%w: --gateway needs --database-url and --etcd: the gateway's database, for the direct path, and its etcd, whose keys sign each account's token", errUsage)
	}
	if len(cfg.EtcdEndpoints) > 0 && cfg.KEKFile == "" {
		return fmt.Errorf("%w: --etcd needs --token-kek-file, the KEK file of that etcd's gateways: a KEK of the run's own would seal a new etcd's first key under a KEK gone with the run", errUsage)
	}
	if cfg.Replicas > 0 {
		cfg.ReplicaArgs = o.etcdAccess.args()
	}
	if o.etcdAccess.set() && len(cfg.EtcdEndpoints) == 0 {
		return fmt.Errorf("%w: --etcd-cacert, --etcd-cert, --etcd-key, --etcd-user and --etcd-password-file are for --etcd: the embedded etcd takes none", errUsage)
	}
	if len(cfg.EtcdEndpoints) > 0 {
		ecfg := serveConfig{EtcdEndpoints: cfg.EtcdEndpoints, EtcdAccess: o.etcdAccess}
		if _, err := ecfg.EtcdAccess.clientConfig(ecfg.EtcdEndpoints, "bench"); err != nil {
			return err // its files, before anything starts
		}
		cfg.DialEtcd = func(ctx context.Context) (*clientv3.Client, error) {
			cli, err := dialEtcd(ctx, ecfg, "bench")
			return cli, etcdError("bench", ecfg, err)
		}
	}
	if err := cfg.CheckLoad(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if _, err := os.Stat(cfg.Dir); err != nil {
		return fmt.Errorf("bench: %w (run from the repository root or pass --bench DIR)", err)
	}

	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if cfg.GatewayURL == "" && len(cfg.EtcdEndpoints) == 0 {
		etcd, err := etcdserver.Start(startCtx, "")
		if err != nil {
			return fmt.Errorf("bench: etcd: %w", err)
		}
		defer etcd.Close()
		cfg.EtcdEndpoints, cfg.EtcdInProcess = etcd.Endpoints(), true
	}
	if cfg.DatabaseURL == "" {
		pg, err := pgcluster.Start(startCtx, pgcluster.Options{})
		if err != nil {
			return fmt.Errorf("bench: PostgreSQL: %w (or set DATABASE_URL to use a running server)", err)
		}
		defer pg.Stop()
		cfg.DatabaseURL = pg.URL()
	}

	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("bench: CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if o.leases {
		return runLeaseBench(ctx, cfg, o.asJSON, out)
	}
	if o.clientLibraries {
		return runClientBench(ctx, cfg, o.rounds, o.asJSON, out)
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if o.asJSON {
		err = rep.WriteJSON(out)
	} else {
		err = rep.WriteText(out)
	}
	return errors.Join(err, rep.Err())
}

// runLeaseBench measures lock cycles through the gateway beside etcd's
// Session and Mutex (bench.RunLeases).
func runLeaseBench(ctx context.Context, cfg bench.Config, asJSON bool, out io.Writer) error {
	rep, err := bench.RunLeases(ctx, cfg)
	if err != nil {
		return err
	}
	if asJSON {
		err = rep.WriteJSON(out)
	} else {
		err = rep.WriteText(out)
	}
	return errors.Join(err, rep.Err())
}

// runClientBench measures fenced writes through each client library
// beside its language's bare HTTP call (bench.RunClientLibraries).
func runClientBench(ctx context.Context, cfg bench.Config, rounds int, asJSON bool, out io.Writer) error {
	if _, err := exec.LookPath("python3"); err != nil {
		return errors.New("bench: python3 is not installed: the Python client cannot be measured")
	}
	ts, err := tsclient.BuildClient()
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	py := filepath.Join("clients", "python", "bench")
	drivers := []bench.ClientDriver{
		{Language: "go", Path: "client"},
		{Language: "go", Path: "bare"},
		{Language: "python", Path: "client", Argv: []string{"python3", "driver.py"}, Dir: py},
		{Language: "python", Path: "bare", Argv: []string{"python3", "driver.py"}, Dir: py},
		{Language: "typescript", Path: "client", Argv: []string{"node", "build/bench/driver.js"}, Dir: ts},
		{Language: "typescript", Path: "bare", Argv: []string{"node", "build/bench/driver.js"}, Dir: ts},
		{Language: "typescript", Path: "bare-fetch", Argv: []string{"node", "build/bench/driver.js"}, Dir: ts},
	}
	rep, err := bench.RunClientLibraries(ctx, cfg, drivers, rounds)
	if err != nil {
		return err
	}
	if asJSON {
		err = rep.WriteJSON(out)
	} else {
		err = rep.WriteText(out)
	}
	return errors.Join(err, rep.Err())
}

// args are a's flags as a child serve takes them: the replicas of
// --replicas reach --etcd as the bench does.
func (a etcdAccess) args() []string {
	var out []string
	for _, f := range []struct{ name, value string }{
		{"--etcd-cacert", a.CACert}, {"--etcd-cert", a.Cert}, {"--etcd-key", a.Key},
		{"--etcd-user", a.User}, {"--etcd-password-file", a.PasswordFile},
	} {
		if f.value != "" {
			out = append(out, f.name, f.value)
		}
	}
	return out
}

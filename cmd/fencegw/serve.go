package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/guard"
	"github.com/fencegw/fencegw/node"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

const startupTimeout = 30 * time.Second

// maxHeaderBytes bounds a request's header block; past it net/http answers
// 431 itself.
const maxHeaderBytes = 64 << 10

func serveCommand() *cobra.Command {
	var cfg serveConfig
	cmd := &cobra.Command{
		Use:   "serve --database-url URL --etcd HOST:PORT,... --policy FILE [flags]",
		Short: "run the gateway (config from flags and FENCEGW_* environment)",
		Long: `Runs the gateway: fenced writes over HTTP, leases from etcd, /metrics,
/livez and /readyz. Every flag can also be set by an environment variable,
FENCEGW_ and the flag's name in capitals (--max-body: FENCEGW_MAX_BODY);
the command line wins. --database-url also reads DATABASE_URL, --etcd also
FENCEGW_ETCD_ENDPOINTS, then etcdctl's ETCDCTL_ENDPOINTS; --etcd-cacert,
--etcd-cert and --etcd-key also ETCDCTL_CACERT, ETCDCTL_CERT and
ETCDCTL_KEY. --unsafe-no-fence and --unsafe-ignore-commit-warnings have no
variable.`,
		Example: `  fencegw serve --database-url postgres://fencegw@db/app --etcd e1:2379,e2:2379,e3:2379 \
      --policy policy.yaml --listen 0.0.0.0:8080`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags()); err != nil {
				return err
			}
			if err := cfg.check(); err != nil {
				return err
			}
			return serve(cmd.Context(), cfg, nil)
		},
	}
	fs := cmd.Flags()
	bindTortureClock(fs, &cfg.TortureClock)
	cfg.bind(cmd, serveDefaults)
	cfg.bindBackends(cmd, fs, allBackends)
	cfg.hurry = secondSignal
	cfg.bindUnsafe(fs)
	return cmd
}

// serve runs the gateway until ctx ends, then shuts down within
// cfg.ShutdownTimeout. onReady, if set, is called with the bound address
// once the gateway is ready.
func serve(ctx context.Context, cfg serveConfig, onReady func(addr string)) error {
	cmd := cmp.Or(cfg.command, "serve") // errors name the command the user ran
	log := cfg.logger()
	pol, err := policy.Load(cfg.PolicyPath)
	if err != nil {
		return err
	}
	if cfg.UnsafeNoFence {
		log.Error("--unsafe-no-fence: FENCING IS OFF, stale writes will land; this mode exists only for control runs (fencegw torture, the examples told without the fence)")
	}
	if cfg.UnsafeIgnoreCommitWarnings {
		log.Error("--unsafe-ignore-commit-warnings: a COMMIT PostgreSQL warned about is answered 200, and a failover can lose it; this mode exists only for torture control runs")
	}
	for _, d := range pol.Deprecations() {
		log.Warn("the policy uses a deprecated word", "policy", cfg.PolicyPath, "deprecated", d)
	}
	if !pol.AuthRequired() {
		log.Warn("the policy declares no clients: any caller may call any operation; declare clients before exposing the gateway")
	}
	creds, err := loadCredentials(cfg, pol, log)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	startCtx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	pool, err := openPool(startCtx, cfg)
	if err != nil {
		return fmt.Errorf("%s: database: %w", cmd, err)
	}
	defer pool.Close()
	cc := pool.Config().ConnConfig
	stopWaiting := sayWaiting(log, "PostgreSQL", net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port))))
	want, err := awaitSchema(startCtx, pool, cmd)
	stopWaiting()
	if err != nil {
		return err
	}
	stopWaiting = sayWaiting(log, "PostgreSQL, to check the policy's statements", net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port))))
	err = retryWhile(startCtx, connectionLost, func() error { return fence.CheckPolicy(startCtx, pool, pol) })
	stopWaiting()
	if err != nil {
		return err
	}
	warnUnguarded(startCtx, pool, pol, log)
	warnPlaintextPostgres(startCtx, pool, log)
	cli, auth, err := waitEtcd(startCtx, cfg, log, cmd, creds.keks)
	if err != nil {
		return err
	}
	defer cli.Close()
	if on, known := auth.AuthEnabled(startCtx); known && !on && cfg.command != "dev" { // dev's etcd is its own, in process
		log.Warn("etcd's auth is off: any client etcd lets in may read and write the gateway's keys and locks, and issue tokens; give the gateways a user limited to /fencegw/ and turn auth on (fencegw etcd-auth, docs/operations/tls-and-auth.md)")
	}
	if cfg.KEK.ReadClear {
		auth.ReadClearKeys()
		log.Warn("--read-clear-token-keys: signing keys stored in clear are used too; run fencegw keys rewrap, then restart without the flag")
	}
	if err := useTortureClock(cfg.TortureClock, auth, log); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}

	proxies, err := trustedProxies(cfg.TrustedProxies)
	if err != nil {
		return err
	}
	// The node is what this replica does besides answering: its loops
	// start once the gateway serves, and its queues feed them meanwhile.
	nd, err := node.New(node.Config{Pool: pool, Authority: auth, Policy: pol, Logger: log, UnsafeNoFence: cfg.UnsafeNoFence})
	if err != nil {
		return err
	}
	gwConfig := gateway.Config{
		Pool: pool, Authority: auth, Policy: pol, Logger: log, Node: nd,
		MaxBodyBytes: cfg.MaxBodyBytes, WriteTimeout: cfg.WriteTimeout, MaxInFlight: cfg.MaxInFlight, SchemaVersion: want,
		MaxLeasesPerClient: cfg.MaxLeases, MaxLeaseRequests: cfg.MaxLeaseCalls, MaxWatches: cfg.MaxWatches,
		IdempotencyRetention: cfg.IdempotencyRetention, UnsafeNoFence: cfg.UnsafeNoFence, UnsafeIgnoreCommitWarnings: cfg.UnsafeIgnoreCommitWarnings,
		NoGroupCommit: !cfg.GroupCommit, MaxWriteTransactions: cfg.WriteTxs, TrustedProxies: proxies,
		OpsListener: cfg.TLS.OpsListen != "",
	}
	creds.configure(&gwConfig)
	frontMetrics := cfg.SQLFront.metrics()
	gwConfig.Collectors = append(gwConfig.Collectors, frontMetrics.Collectors()...)
	gw, err := gateway.New(gwConfig)
	if err != nil {
		return err
	}
	// A halted authority is not a start-up failure: the gateway serves
	// /readyz with the reason and refuses writes until `fencegw epoch bump`.
	// etcd and PostgreSQL answered just now, but either may be cut off
	// again (a partition, a lost quorum, a restart): that is waited out,
	// as the waits before were.
	check := func() error {
		if err := nd.Watchdog().Check(startCtx); !errors.Is(err, tokens.ErrHalted) {
			return err
		}
		return nil
	}
	transient := func(err error) bool {
		return (etcdUnavailable(err) && !authority.AccessDenied(err)) || connectionLost(err)
	}
	stopWaiting = sayWaiting(log, "etcd and PostgreSQL, for the authority's first check", strings.Join(cfg.EtcdEndpoints, ","))
	err = retryWhile(startCtx, transient, check)
	stopWaiting()
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	// Its own bound, not what the waits above left of start-up's.
	nd.ResumeHistory(ctx)
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	maxConns, maxConnsWhy := maxConnections(cfg.MaxConnections)
	ln = gw.LimitConnections(ln, maxConns, cfg.TLS.CertFile != "")
	srv := &http.Server{
		Handler:           gw.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		// A request's headers are a token field, a key and credentials;
		// net/http's default, 1 MiB, is memory any client may make a
		// connection hold, and text a log may be asked to echo.
		MaxHeaderBytes: maxHeaderBytes,
		ReadTimeout:    30 * time.Second,
		// A lease request may wait up to tokens.MaxWait for the lock.
		WriteTimeout: authority.MaxWait + 30*time.Second,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- creds.serve(srv, ln) }()
	if cfg.DebugListen != "" {
		stopDebug, err := serveDebug(cfg.DebugListen, log)
		if err != nil {
			_ = srv.Close()
			return fmt.Errorf("%s: --debug-listen: %w", cmd, err)
		}
		defer stopDebug()
	}
	stopOps, err := serveOps(cfg.TLS, gw.OpsHandler(), log, cfg.ShutdownTimeout)
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("%s: %w", cmd, err)
	}
	defer stopOps() // after the API: probes see /readyz fail while it drains
	frontAddr, stopFront, err := serveSQLFront(cfg.SQLFront, frontMetrics, cfg.DatabaseURL, pool, auth, pol, nd, creds, log)
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("%s: %w", cmd, err)
	}
	defer stopFront()
	if frontAddr != "" && cfg.frontBound != nil {
		cfg.frontBound(frontAddr)
	}
	stopBackground := node.RunLoops(ctx,
		func(ctx context.Context) { nd.RunJanitor(ctx, cfg.IdempotencyRetention) },
		func(ctx context.Context) { nd.RunPruning(ctx, cfg.PruneEvery) },
		func(ctx context.Context) { nd.Watchdog().Run(ctx, cfg.AuthorityCheck) },
		func(ctx context.Context) { nd.RunReplicaCheck(ctx, cfg.AuthorityCheck) },
		nd.RunAudit,
		nd.RunHistory,
		nd.RunHoldTimes,
		nd.RunReaper,
		func(ctx context.Context) { nd.RunStatusRates(ctx, gw.WriteCounts) },
	)
	defer stopBackground()
	gw.SetReady(true)
	addr := ln.Addr().String()
	log.Info("fencegw serving", "addr", addr, "scheme", cfg.TLS.scheme(), "policy", cfg.PolicyPath, "operations", len(pol.Operations), "etcd", cfg.EtcdEndpoints,
		"max_connections", maxConns, "max_connections_from", maxConnsWhy)
	if onReady != nil {
		onReady(addr)
	}

	select {
	case err := <-served:
		return fmt.Errorf("%s: %w", cmd, err)
	case <-ctx.Done():
	}
	// Fail readiness first and keep serving until load balancers have
	// seen it, so that they stop sending before the listener closes;
	// then drain. Meanwhile idle keep-alive connections are closed and
	// every answer says Connection: close, so that clients holding one
	// reconnect, through the load balancer, to a replica that is ready.
	srv.SetKeepAlivesEnabled(false)
	gw.SetReady(false)
	if cfg.ShutdownDelay > 0 {
		log.Info("fencegw shutting down: /readyz answers 503, still serving until load balancers notice", "delay", cfg.ShutdownDelay.String())
		delay := time.NewTimer(cfg.ShutdownDelay)
		select {
		case <-delay.C:
		case <-cfg.hurry:
			delay.Stop()
			log.Info("second signal: shutdown delay cut short")
		}
	}
	gw.StopLeaseWaits() // a wait would outlast the drain, and its lease the process
	stopFront()         // its sessions end, and PostgreSQL rolls back what each had open
	log.Info("fencegw draining requests in flight", "timeout", cfg.ShutdownTimeout.String())
	shutCtx, cancelShut := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancelShut()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("%s: shutdown: %w", cmd, err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	return nil
}

// sayWaiting logs, every few seconds until stop is called, that start-up
// still waits for what (at where): an unreachable backend otherwise looks
// like a hang until startupTimeout.
func sayWaiting(log *slog.Logger, what, where string) (stop func()) {
	done := make(chan struct{})
	go func() {
		start := time.Now()
		t := time.NewTicker(3 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				log.Warn("start-up waiting for "+what, "at", where, "waited", time.Since(start).Round(time.Second).String(), "gives_up_after", startupTimeout.String())
			}
		}
	}()
	return func() { close(done) }
}

// openPool connects to PostgreSQL. Unless the database URL says otherwise,
// a session waits for a lock (a busy fence row) no longer than a write may
// take: when the gateway gives up on a write, the server stops waiting too,
// instead of holding its place in the queue for a client that is gone.
// defaultPoolSize is four connections per core the Go runtime uses: in
// the sweep of docs/benchmarks-history.md, more connections than pgx's
// default beat it on uniform load, where more sessions let PostgreSQL
// group their commits' flushes, and lost nothing on a hot resource.
func defaultPoolSize() int32 { return int32(4 * runtime.GOMAXPROCS(0)) }

func openPool(ctx context.Context, cfg serveConfig) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(cfg.DatabaseURL, "pool_max_conns") {
		pc.MaxConns = defaultPoolSize()
	}
	// A write waits for another transaction's row lock three quarters of
	// its deadline at most: PostgreSQL then refuses it, not applied. Were
	// the two equal, the deadline would usually end the wait first, and a
	// write cancelled after its commit was sent has an unknown outcome.
	if _, set := pc.ConnConfig.RuntimeParams["lock_timeout"]; !set {
		pc.ConnConfig.RuntimeParams["lock_timeout"] = strconv.FormatInt((cfg.WriteTimeout * 3 / 4).Milliseconds(), 10)
	}
	fence.ConfigurePool(pc)
	return pgxpool.NewWithConfig(ctx, pc)
}

// warnUnguarded logs the policy's guarded tables that lack their triggers:
// the gateway works without them, but nothing stops writes that bypass it.
func warnUnguarded(ctx context.Context, pool *pgxpool.Pool, pol *policy.Policy, log *slog.Logger) {
	if len(pol.Guarded) == 0 {
		return
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return // the pool's problem shows soon enough
	}
	defer conn.Release()
	statuses, err := guard.Check(ctx, conn.Conn(), pol)
	for _, s := range statuses {
		switch {
		case s.Problem == guard.NotInPolicy:
			log.Warn("a table carries fencegw's guard triggers but the policy does not list it: they refuse every write the gateway will never make; run fencegw guard remove with the policy that installed them",
				slog.String("table", s.Table))
		case s.Problem != "":
			log.Warn("guarded table not guarded: writes that bypass the gateway reach it; run fencegw guard install",
				slog.String("table", s.Table), slog.String("problem", s.Problem))
		}
	}
	if err != nil && !errors.Is(err, guard.ErrNotGuarded) {
		log.Warn("could not check the guard triggers", slog.String("error", err.Error()))
	}
}

package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/cgroupcpu"
	"github.com/fencegw/fencegw/internal/harness/torture/check"
	"github.com/fencegw/fencegw/schema"
)

// Run starts the topology — a 3-member etcd cluster of processes, a
// restartable PostgreSQL,
// cfg.Gateways gateway processes, cfg.Workers worker processes and
// cfg.LeaseChurn lease-churn worker processes — lets
// the nemesis loose for cfg.Duration, then checks the workers' histories
// against the database. Progress goes to log; the report is also written
// to report.json in the run folder.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (check.Report, error) {
	if err := cfg.Check(); err != nil {
		return check.Report{}, err
	}
	dir, cleanup, err := runDir(cfg)
	if err != nil {
		return check.Report{}, err
	}
	defer cleanup()
	bin := cfg.Binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return check.Report{}, err
		}
	}

	setupCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var etcdTLS *etcdTLS
	if cfg.EtcdTLS {
		if etcdTLS, err = newEtcdTLS(dir); err != nil {
			return check.Report{}, err
		}
	}
	etcd, err := startCluster(setupCtx, bin, dir, etcdTLS)
	if err != nil {
		return check.Report{}, err
	}
	defer stopCluster(etcd)
	db, err := startDatabase(setupCtx, cfg, filepath.Join(dir, "pg"))
	if err != nil {
		return check.Report{}, err
	}
	defer db.stop()
	if err := prepareDatabase(setupCtx, db.url(), cfg.Resources, cfg.ChurnResources); err != nil {
		return check.Report{}, err
	}
	policyText := policy(cfg)
	var front *wire
	var clientOpts []client.Option
	if cfg.Wire > 0 {
		var clients string
		if front, clients, err = setUpWire(setupCtx, dir, db.url()); err != nil {
			return check.Report{}, err
		}
		policyText += clients
		clientOpts = append(clientOpts, client.WithBearerFile(front.keyFile))
	}
	if err := db.prepared(setupCtx); err != nil {
		return check.Report{}, err
	}
	policyPath := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyPath, []byte(policyText), 0o644); err != nil {
		return check.Report{}, err
	}
	var skipped map[string]string
	var cpu *cgroupcpu.Group
	if cfg.Throttle {
		var why string
		if cpu, why = throttleGroup(); cpu == nil {
			skipped = map[string]string{"throttle-worker": why}
			log.Warn("torture: throttle-worker skipped", "why", why)
		} else {
			defer cpu.Close()
		}
	}
	var gatewayClocks []*clockPage
	if cfg.ClockFaults {
		if gatewayClocks, err = mapClockPages(dir, "gateway-clock", cfg.Gateways); err != nil {
			return check.Report{}, err
		}
		defer closePages(gatewayClocks)
	}
	gateways, allLinks, err := startGateways(setupCtx, cfg, bin, dir, db.url(), etcd, policyPath)
	defer func() {
		for _, g := range gateways {
			g.stop()
		}
		for _, l := range allLinks {
			l.close()
		}
	}()
	if err != nil {
		return check.Report{}, err
	}
	var urls, fronts []string
	for _, g := range gateways {
		urls = append(urls, g.url())
		if g.front != "" {
			fronts = append(fronts, g.front)
		}
	}
	log.Info("torture: topology up", "gateways", urls, "workers", cfg.Workers, "lease_churn", cfg.LeaseChurn, "dir", dir, "unsafe_no_fence", cfg.UnsafeNoFence,
		"coalesce", cfg.Coalesce, "group_commit", cfg.GroupCommit, "failover", cfg.Failover, "async_standby", cfg.AsyncStandby,
		"unsafe_ignore_commit_warnings", cfg.UnsafeIgnoreCommitWarnings)

	// The nemesis's own writes: across the failovers of an asynchronous
	// standby, else as a late holder all through the run.
	procs := cfg.workerProcs()
	holders, err := newTwoHolders(urls, historyPath(dir, procs), procs, clientOpts...)
	if err != nil {
		return check.Report{}, err
	}
	defer holders.close()
	if front != nil {
		if holders.front, err = newWireWriter(strings.Join(fronts, ","), front.db, front.keyFile, 100, cfg.UnsafeNoFence); err != nil {
			return check.Report{}, err
		}
	}
	histories := procs + 1
	var late, latePermit *twoHolders
	if cfg.lossControl() {
		db.replicated.stale = holders
	} else {
		late = holders
	}
	if cfg.Semaphores > 0 && !cfg.lossControl() {
		// A late holder of a permit too: the semaphore's control fails
		// however the workers' pauses fall.
		if latePermit, err = newTwoHolders(urls, historyPath(dir, histories), histories, clientOpts...); err != nil {
			return check.Report{}, err
		}
		defer latePermit.close()
		latePermit.family, latePermit.slot = "sem", "sem/"+wentBackResource
		histories++
	}
	var churnHolder *twoHolders
	if cfg.LeaseChurn > 0 {
		// The successor of the lease-churn workers the nemesis stops:
		// their control fails however the pauses fall.
		if churnHolder, err = newTwoHolders(urls, historyPath(dir, histories), histories, clientOpts...); err != nil {
			return check.Report{}, err
		}
		defer churnHolder.close()
		churnHolder.family = "churn"
		if churnHolder.grants, err = newGrantLog(grantsPath(dir, histories), histories); err != nil {
			return check.Report{}, err
		}
		histories++
	}
	start := time.Now()
	until, bound := start.Add(cfg.Duration), start.Add(cfg.Duration)
	if len(cfg.FaultsMissing(nil, skipped)) > 0 {
		bound = start.Add(MaxOverrun * cfg.Duration)
	}
	stopFile := filepath.Join(dir, "stop")
	var clocks []*clockPage
	if cfg.workerPages() {
		if clocks, err = mapClockPages(dir, "clock", procs); err != nil {
			return check.Report{}, err
		}
		defer closePages(clocks)
	}
	workers, err := startWorkers(bin, dir, cfg, urls, db.url(), bound, stopFile, front, fronts)
	if err != nil {
		return check.Report{}, err
	}
	n := &nemesis{cfg: cfg, rnd: rand.New(rand.NewPCG(uint64(cfg.Seed), 0)), log: log, workers: workers,
		gateways: gateways, pg: db.pg, replicated: db.replicated, etcd: etcd, links: allLinks, faults: map[string]int{}, paused: map[int]bool{},
		bin: bin, dir: dir, dbURL: db.url(), late: late, latePermit: latePermit, churnHolder: churnHolder, clocks: clocks, clockBusy: make([]atomic.Bool, procs), gatewayClocks: gatewayClocks, cpu: cpu, skipped: skipped}
	if db.replicated != nil {
		db.replicated.promoted = n.fencesAfterFailover
	}
	nctx, stopNemesis := context.WithDeadline(ctx, bound)
	go reportProgress(nctx, log, db.url(), n, start)
	go func() { n.awaitEnough(nctx, until); stopNemesis() }()
	n.run(nctx) // returns at the end with every worker resumed
	stopNemesis()
	if err := os.WriteFile(stopFile, nil, 0o644); err != nil {
		return check.Report{}, err
	}
	waitWorkers(workers, 30*time.Second)
	log.Info("torture: workers done, checking", "faults", n.counts())

	if cfg.EtcdRollback && !cfg.RollbackBump {
		p50, worst := haltTimes(n.haltAfter)
		n.faults["rollback-halt-ms-p50"], n.faults["rollback-halt-ms-max"] = p50, worst
	}
	report, err := collect(ctx, dir, db.checkURL(), histories, n.counts(), skipped, n.fences)
	if err != nil {
		return check.Report{}, err
	}
	if report.Batching != nil {
		log.Info("torture: shared transactions", "writes", report.Batching.String())
	}
	b, _ := json.MarshalIndent(report, "", "  ")
	_ = os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644)
	return report, nil
}

func runDir(cfg Config) (string, func(), error) {
	dir, remove := cfg.Dir, false
	if entries, err := os.ReadDir(dir); dir != "" && err == nil && len(entries) > 0 {
		// Old histories, data and logs would mix with this run's.
		return "", nil, fmt.Errorf("torture: run folder %s is not empty", dir)
	}
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "fencegw-torture-"); err != nil {
			return "", nil, err
		}
		remove = !cfg.Keep
	}
	// PostgreSQL may run as another user (when we are root): it must be
	// able to reach its folder.
	for _, d := range []string{dir, filepath.Join(dir, "pg")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", nil, err
		}
		if err := os.Chmod(d, 0o755); err != nil {
			return "", nil, err
		}
	}
	return dir, func() {
		if remove {
			os.RemoveAll(dir)
		}
	}, nil
}

func prepareDatabase(ctx context.Context, dbURL string, resources, churnResources int) error {
	if err := schema.Up(dbURL, schema.Gateway()); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err = conn.Exec(ctx, schemaSQL); err != nil {
		return err
	}
	if _, err = conn.Exec(ctx, roleSQL); err != nil {
		return err
	}
	if _, err = conn.Exec(ctx, balancesSQL, resources, initialBalance, []string{"res", "strict"}); err != nil {
		return err
	}
	if _, err = conn.Exec(ctx, balancesSQL, churnResources, initialBalance, []string{"churn"}); err != nil {
		return err
	}
	if _, err = conn.Exec(ctx, semBalancesSQL, resources, initialBalance, semPermits, "sem/"+wentBackResource); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "INSERT INTO torture.balances (resource, cents) VALUES ($1, $2)", "res/"+wentBackResource, initialBalance)
	return err
}

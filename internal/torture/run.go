package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/torture/check"
	"github.com/fencegw/fencegw/schema"
)

// Run starts the topology — a 3-member etcd cluster of processes, a
// restartable PostgreSQL,
// cfg.Gateways gateway processes and cfg.Workers worker processes — lets
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
	if err := prepareDatabase(setupCtx, db.url(), cfg.Resources); err != nil {
		return check.Report{}, err
	}
	if err := db.prepared(setupCtx); err != nil {
		return check.Report{}, err
	}
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(fmt.Sprintf(policyYAML, strconv.FormatBool(cfg.Coalesce), strconv.FormatBool(cfg.GroupCommit))), 0o644); err != nil {
		return check.Report{}, err
	}
	gatewayDB := db.url()
	var proxy *slowProxy
	if db.pg != nil {
		pgURL, err := url.Parse(db.url())
		if err != nil {
			return check.Report{}, err
		}
		if proxy, err = startProxy(pgURL.Host); err != nil { // same port across PostgreSQL restarts
			return check.Report{}, err
		}
		defer proxy.close()
		if gatewayDB, err = proxy.proxiedURL(db.url()); err != nil {
			return check.Report{}, err
		}
	}

	var gateways []*gatewayProc
	defer func() {
		for _, g := range gateways {
			g.stop()
		}
	}()
	var urls []string
	for i := range cfg.Gateways {
		g, err := newGateway(bin, dir, i, gatewayDB, etcdFlags(etcd), policy, cfg.UnsafeNoFence)
		if err != nil {
			return check.Report{}, err
		}
		if err := g.start(setupCtx); err != nil {
			return check.Report{}, fmt.Errorf("%w (log: %s)", err, g.log)
		}
		gateways = append(gateways, g)
		urls = append(urls, g.url())
	}
	log.Info("torture: topology up", "gateways", urls, "workers", cfg.Workers, "dir", dir, "unsafe_no_fence", cfg.UnsafeNoFence,
		"coalesce", cfg.Coalesce, "group_commit", cfg.GroupCommit, "failover", cfg.Failover, "async_standby", cfg.AsyncStandby)

	// The nemesis's own writes: across the failovers of an asynchronous
	// standby, else as a late holder all through the run.
	holders, err := newTwoHolders(urls, historyPath(dir, cfg.Workers), cfg.Workers)
	if err != nil {
		return check.Report{}, err
	}
	defer holders.close()
	histories := cfg.Workers + 1
	var late *twoHolders
	if cfg.AsyncStandby {
		db.replicated.stale = holders
	} else {
		late = holders
	}
	start := time.Now()
	until, bound := start.Add(cfg.Duration), start.Add(cfg.Duration)
	if len(cfg.FaultsMissing(nil)) > 0 {
		bound = start.Add(MaxOverrun * cfg.Duration)
	}
	stopFile := filepath.Join(dir, "stop")
	workers, err := startWorkers(bin, dir, cfg, urls, db.url(), bound, stopFile)
	if err != nil {
		return check.Report{}, err
	}
	n := &nemesis{cfg: cfg, rnd: rand.New(rand.NewPCG(uint64(cfg.Seed), 0)), log: log, workers: workers,
		gateways: gateways, pg: db.pg, replicated: db.replicated, etcd: etcd, proxy: proxy, faults: map[string]int{}, paused: map[int]bool{},
		bin: bin, dir: dir, dbURL: db.url(), late: late}
	nctx, stopNemesis := context.WithDeadline(ctx, bound)
	go reportProgress(nctx, log, db.url(), n, start)
	go func() { n.awaitEnough(nctx, until); stopNemesis() }()
	n.run(nctx) // returns at the end with every worker resumed
	stopNemesis()
	if err := os.WriteFile(stopFile, nil, 0o644); err != nil {
		return check.Report{}, err
	}
	waitWorkers(workers, 30*time.Second)
	log.Info("torture: workers done, checking", "faults", n.faults, "coalesced_writes_per_transaction", coalesced(gateways))

	if cfg.EtcdRollback && !cfg.RollbackBump {
		p50, worst := haltTimes(n.haltAfter)
		n.faults["rollback-halt-ms-p50"], n.faults["rollback-halt-ms-max"] = p50, worst
	}
	report, err := collect(ctx, dir, db.checkURL(), histories, n.faults)
	if err != nil {
		return check.Report{}, err
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

func prepareDatabase(ctx context.Context, dbURL string, resources int) error {
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
	if _, err = conn.Exec(ctx, balancesSQL, resources, initialBalance); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "INSERT INTO torture.balances (resource, cents) VALUES ($1, $2)", "res/"+wentBackResource, initialBalance)
	return err
}

// MaxOverrun bounds how far past Duration a run waits for its minimum
// failovers and rollbacks.
const MaxOverrun = 4

func startWorkers(bin, dir string, cfg Config, urls []string, dbURL string, until time.Time, stopFile string) ([]*exec.Cmd, error) {
	var cmds []*exec.Cmd
	for i := range cfg.Workers {
		out, err := os.Create(filepath.Join(dir, fmt.Sprintf("worker-%d.log", i)))
		if err != nil {
			return cmds, err
		}
		cmd := exec.Command(bin, "torture-worker", "--gateways", strings.Join(urls, ","),
			"--resources", strconv.Itoa(cfg.Resources), "--ttl", cfg.TTL.String(),
			"--until", until.Format(time.RFC3339Nano), "--stop-file", stopFile, "--history", historyPath(dir, i),
			"--worker", strconv.Itoa(i), "--seed", strconv.FormatInt(cfg.Seed, 10), "--burst", strconv.Itoa(cfg.Burst), "--database-url", dbURL,
			"--transfers", strconv.Itoa(cfg.Transfers))
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			out.Close()
			return cmds, err
		}
		out.Close() // the child has its own descriptor
		cmds = append(cmds, cmd)
	}
	return cmds, nil
}

func historyPath(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("history-%d.jsonl", i))
}

// waitWorkers waits for the workers to pass their deadline and exit, and
// kills those that do not within grace.
func waitWorkers(cmds []*exec.Cmd, grace time.Duration) {
	done := make(chan struct{})
	go func() {
		for _, c := range cmds {
			_ = c.Wait()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
		for _, c := range cmds {
			_ = c.Process.Kill()
		}
		<-done
	}
}

// collect reads every history and the log table and checks them.
func collect(ctx context.Context, dir, dbURL string, workers int, faults map[string]int) (check.Report, error) {
	var history []check.Event
	for i := range workers {
		f, err := os.Open(historyPath(dir, i))
		if err != nil {
			return check.Report{}, err
		}
		evs, err := check.ReadHistory(f)
		f.Close()
		if err != nil {
			return check.Report{}, fmt.Errorf("torture: worker %d: %w", i, err)
		}
		history = append(history, evs...)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return check.Report{}, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT id, resource, epoch, revision, intent, worker, delta FROM torture.log ORDER BY id")
	if err != nil {
		return check.Report{}, err
	}
	logRows, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (check.Row, error) {
		var row check.Row
		err := r.Scan(&row.ID, &row.Resource, &row.Epoch, &row.Revision, &row.Intent, &row.Worker, &row.Delta)
		return row, err
	})
	if err != nil {
		return check.Report{}, err
	}
	ledger := check.Ledger{Initial: initialBalance, Balances: map[string]int64{}}
	rows, err = conn.Query(ctx, "SELECT resource, cents FROM torture.balances")
	if err != nil {
		return check.Report{}, err
	}
	var res string
	var cents int64
	if _, err := pgx.ForEachRow(rows, []any{&res, &cents}, func() error { ledger.Balances[res] = cents; return nil }); err != nil {
		return check.Report{}, err
	}
	return check.Check(check.Input{History: history, Rows: logRows, Ledger: &ledger, Faults: faults}), nil
}

// coalesced reads the gateways' batch-size histograms: writes per
// transaction on coalesced resources (since each gateway's last restart).
func coalesced(gateways []*gatewayProc) string {
	var sum, count float64
	for _, g := range gateways {
		resp, err := http.Get(g.url() + "/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(b), "\n") {
			name, value, _ := strings.Cut(line, " ")
			v, _ := strconv.ParseFloat(value, 64)
			switch name {
			case "fencegw_coalesced_batch_size_sum":
				sum += v
			case "fencegw_coalesced_batch_size_count":
				count += v
			}
		}
	}
	if count == 0 {
		return "none"
	}
	return fmt.Sprintf("%.0f writes in %.0f transactions", sum, count)
}

package bench

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"time"
)

// RunLeases measures lock cycles (acquire, optionally one fenced write,
// release) through the gateway's lease API and, beside them on the same
// etcd, with etcd's own recipe (concurrency.Session and Mutex) as the
// yardstick: for each client count, each distribution (uniform: each
// cycle locks an account of 10,000 at random, distinct resources but for
// chance; hot: every cycle locks account 1, a FIFO handoff) and without
// and with the write. ctx ends the run early, with an error.
func RunLeases(ctx context.Context, cfg Config) (*LeaseReport, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.Wrk || cfg.IdleConnections > 0 || cfg.Rate > 0 {
		return nil, fmt.Errorf("%w: --leases runs closed-loop lock cycles only: no --wrk, --idle-connections or --rate", ErrConfig)
	}
	if err := checkFileLimit(connections(cfg)); err != nil {
		return nil, err
	}
	e, err := setup(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.close()
	rep := &LeaseReport{
		Gateway: gatewayName(cfg), EtcdInProcess: cfg.EtcdInProcess, GOMAXPROCS: runtime.GOMAXPROCS(0),
		DurationSeconds: cfg.Duration.Seconds(), WarmupSeconds: cfg.Warmup.Seconds(),
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, n := range cfg.Clients {
		for _, d := range cfg.Dists {
			for _, write := range []bool{false, true} {
				cell, err := e.runLeaseCell(ctx, hc, n, d, write, len(rep.Cells)%2 == 1)
				if err != nil {
					return nil, fmt.Errorf("bench: leases, %d clients, %s: %w", n, d, err)
				}
				rep.Cells = append(rep.Cells, cell)
				if cfg.Progress != nil {
					fmt.Fprintf(cfg.Progress, "bench: leases %3d clients %-7s write %-5v  gateway %7.0f cycles/s  mutex %7.0f cycles/s  ratio %.2f  errors %d\n",
						n, d, write, cell.Gateway.TxPerSec, cell.Mutex.TxPerSec, cell.Ratio, cell.Gateway.ErrorCount()+cell.Mutex.ErrorCount())
				}
			}
		}
	}
	return rep, nil
}

// runLeaseCell measures one cell on both paths, in the order mutexFirst
// says (alternated, so neither always runs on the store the other just
// churned).
func (e *env) runLeaseCell(ctx context.Context, hc *http.Client, n int, d Dist, write, mutexFirst bool) (LeaseCell, error) {
	cell := LeaseCell{Clients: n, Dist: d, Write: write}
	paths := []func() error{
		func() (err error) { cell.Gateway, err = e.runLeaseGateway(ctx, hc, n, d, write); return err },
		func() (err error) { cell.Mutex, err = e.runMutex(ctx, hc, n, d, write); return err },
	}
	if mutexFirst {
		paths[0], paths[1] = paths[1], paths[0]
	}
	for _, run := range paths {
		if err := run(); err != nil {
			return cell, err
		}
	}
	if cell.Mutex.TxPerSec > 0 {
		cell.Ratio = cell.Gateway.TxPerSec / cell.Mutex.TxPerSec
	}
	return cell, nil
}

// runLeaseGateway measures the gateway path: a gateway started for it
// (or the running one), its CPU and etcd's proposals read around the run.
func (e *env) runLeaseGateway(ctx context.Context, hc *http.Client, n int, d Dist, write bool) (LeasePath, error) {
	t, err := e.startTarget(ctx, e.cfg.poolSize(n))
	if err != nil {
		return LeasePath{}, err
	}
	defer t.close()
	lc := newLeaseClient(t.urls, n, e.work, write)
	defer lc.close()
	cpuOf := "the gateway's processes"
	if t.inProcess {
		cpuOf = "this process: the gateway, the bench's client" + map[bool]string{true: " and etcd", false: ""}[e.cfg.EtcdInProcess]
	}
	return e.measureCycles(ctx, hc, n, d, lc.cycle, func() (time.Duration, error) { return cpuUsed(t.pids, t.inProcess) }, cpuOf)
}

// runMutex measures the yardstick: etcd's Session and Mutex on the
// bench's own etcd client, with the write direct to PostgreSQL.
func (e *env) runMutex(ctx context.Context, hc *http.Client, n int, d Dist, write bool) (LeasePath, error) {
	var cycle writeFunc
	if write {
		pool, err := newPool(ctx, e.cfg.DatabaseURL, e.cfg.poolSize(n))
		if err != nil {
			return LeasePath{}, err
		}
		defer pool.Close()
		store, err := newDirectStore(pool)
		if err != nil {
			return LeasePath{}, err
		}
		cycle = mutexCycle(e.etcd, store, e.work, e.auth.Epoch())
	} else {
		cycle = mutexCycle(e.etcd, nil, e.work, 0)
	}
	return e.measureCycles(ctx, hc, n, d, cycle, nil, "")
}

// measureCycles drives n clients running cycle and reads etcd's
// proposals, and with cpu the CPU used, around the run.
func (e *env) measureCycles(ctx context.Context, hc *http.Client, n int, d Dist, cycle writeFunc, cpu func() (time.Duration, error), cpuOf string) (LeasePath, error) {
	m0, merr := readEtcdMetrics(ctx, hc, e.cfg.EtcdEndpoints)
	var c0 time.Duration
	cerr := fmt.Errorf("not asked")
	if cpu != nil {
		c0, cerr = cpu()
	}
	path := LeasePath{Path: drive(ctx, n, d, e.cfg.window(), cycle), ProposalsPerCycle: -1}
	cycles := float64(path.Writes + path.WarmupWrites + path.ErrorCount())
	if m1, err := readEtcdMetrics(ctx, hc, e.cfg.EtcdEndpoints); merr == nil && err == nil && cycles > 0 {
		path.ProposalsPerCycle = (m1.proposals - m0.proposals) / cycles
		if !e.cfg.EtcdInProcess { // else it is this process's CPU, all of it
			path.EtcdCPUPerCycle = time.Duration((m1.cpuSeconds - m0.cpuSeconds) / cycles * float64(time.Second))
		}
	}
	if cerr == nil {
		if c1, err := cpu(); err == nil && cycles > 0 {
			path.CPUPerCycle = time.Duration(float64(c1-c0) / cycles)
			path.CPUOf = cpuOf
		}
	}
	return path, ctx.Err()
}

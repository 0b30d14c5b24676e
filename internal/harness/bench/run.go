package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Run measures every cell of cfg's matrix, one after the other, and
// returns the report. It returns an error only when it could not measure;
// a cell whose writes failed is in the report, marked invalid (see
// Report.Err). ctx ends the run early, with an error.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if err := checkFileLimit(connections(cfg)); err != nil {
		return nil, err
	}
	e, err := setup(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.close()
	srv, err := serverFacts(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	state, err := prefill(ctx, cfg.DatabaseURL, cfg.FenceRows, cfg.IdempotencyRows)
	if err != nil {
		return nil, err
	}
	rep := &Report{
		Gateway:         gatewayName(cfg),
		Replicas:        cfg.Replicas,
		EtcdInProcess:   cfg.EtcdInProcess,
		Coalesce:        e.work.op.Roles[0].Kind.Coalesce,
		GroupCommit:     groupCommits(e.work, cfg),
		Server:          srv,
		GOMAXPROCS:      runtime.GOMAXPROCS(0),
		Operation:       describe(e.work),
		DurationSeconds: cfg.Duration.Seconds(),
		WarmupSeconds:   cfg.Warmup.Seconds(),
		OfferedRate:     cfg.Rate,
		Pgbench:         e.pgbenchNote,
		State:           state,
	}
	empty, err := emptyRoundTrip(ctx, 100*time.Millisecond, min(cfg.Duration, time.Second))
	if err != nil {
		return nil, err
	}
	rep.Process.EmptyHTTP = Allocs{Objects: empty.AllocsPerWrite, Bytes: empty.BytesPerWrite}
	rep.Process.EmptyHTTPLatency = empty.Latency

	for _, n := range cfg.Clients {
		for _, d := range cfg.Dists {
			cell, err := e.runCell(ctx, n, d, len(rep.Cells)%2 == 1)
			if err != nil {
				return nil, fmt.Errorf("bench: %d clients, %s: %w", n, d, err)
			}
			rep.Cells = append(rep.Cells, cell)
			if cfg.Progress != nil {
				pgb := ""
				if cell.Pgbench != nil {
					pgb = fmt.Sprintf("  pgbench %8.0f tx/s  gw/pgb %.2f", cell.Pgbench.TxPerSec, cell.PgbenchRatio)
				}
				fmt.Fprintf(cfg.Progress, "bench: %3d clients %-7s  direct %8.0f tx/s  gateway %8.0f tx/s  ratio %.2f%s  errors %d\n",
					n, d, cell.Direct.TxPerSec, cell.Gateway.TxPerSec, cell.Ratio, pgb, cell.Direct.ErrorCount()+cell.Gateway.ErrorCount()+cell.Overhead.ErrorCount())
			}
		}
	}

	var direct, viaGateway []*Path
	for i := range rep.Cells {
		direct = append(direct, &rep.Cells[i].Direct)
		viaGateway = append(viaGateway, &rep.Cells[i].Gateway)
	}
	rep.Process.DirectPath = meanAllocs(direct)
	if cfg.GatewayURL == "" && cfg.Replicas == 0 {
		a := meanAllocs(viaGateway)
		rep.Process.GatewayPath = &a
		rep.Process.RSSBytes, rep.Process.PeakRSSBytes = readRSS()
	}
	return rep, nil
}

// describe is the workload's SQL as the executor sends it after the fence.
func describe(w workload) string {
	var sqls []string
	for _, st := range w.op.Statements {
		sqls = append(sqls, strings.Join(strings.Fields(st.SQL), " "))
	}
	return w.op.Name + ": " + strings.Join(sqls, "; ")
}

// groupCommits says whether the in-process gateway groups the workload's
// writes: its resource's setting, else the gateway's.
func groupCommits(w workload, cfg Config) bool {
	r := w.op.Roles[0].Kind
	if !r.Coalesce {
		return false
	}
	if r.GroupCommit != nil {
		return *r.GroupCommit
	}
	return !cfg.NoGroupCommit
}

// gatewayName says which gateway the run measured, for the report.
func gatewayName(cfg Config) string {
	switch {
	case cfg.GatewayURL != "":
		return cfg.GatewayURL
	case cfg.Replicas > 0:
		return fmt.Sprintf("%d fencegw serve processes on loopback, one PostgreSQL and one etcd, the load's connections spread over them round-robin", cfg.Replicas)
	}
	return "in-process"
}

// connections is the most connections a cell holds open in this
// process: its idle ones and its clients', both ends of each when the
// gateway is in this process.
func connections(cfg Config) int {
	n := cfg.IdleConnections + slices.Max(cfg.Clients)
	if cfg.GatewayURL == "" && cfg.Replicas == 0 {
		n *= 2
	}
	return n
}

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestRunWritesWhatItCounts runs a tiny matrix against real PostgreSQL and
// etcd and checks that the bench measured real writes: every acknowledged
// write, warmup included, is in the balances, and nothing else is. It
// asserts nothing about speed.
func TestRunWritesWhatItCounts(t *testing.T) {
	const minWrites = 20
	dbURL := testenv.NewDatabase(t)
	endpoints := testenv.EtcdEndpoints() // starts the shared servers before counting goroutines
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var progress bytes.Buffer
	rep, err := Run(ctx, Config{
		DatabaseURL:   dbURL,
		EtcdEndpoints: endpoints,
		KEKFile:       testenv.KEKFile(t),
		Dir:           "../../../testdata/bench",
		Clients:       []int{1, 4},
		Dists:         []Dist{Uniform, Hot},
		Duration:      300 * time.Millisecond,
		Warmup:        50 * time.Millisecond,
		// A window alone can pass without a write on a busy machine.
		MinWrites: minWrites,
		Progress:  &progress,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := rep.Err(); err != nil {
		t.Errorf("Report.Err = %v, want nil", err)
	}
	checkNoLeaks(t, before)
	if got, want := len(rep.Cells), 4; got != want {
		t.Fatalf("%d cells, want %d", got, want)
	}

	var acknowledged int64
	for _, c := range rep.Cells {
		for _, side := range []struct {
			name string
			p    Path
		}{{"direct", c.Direct}, {"gateway", c.Gateway}} {
			p, name := side.p, side.name
			if p.Writes < minWrites || p.TxPerSec <= 0 {
				t.Errorf("%d×%s %s: %d writes, %.0f tx/s, want at least %d", c.Clients, c.Dist, name, p.Writes, p.TxPerSec, minWrites)
			}
			if n := p.ErrorCount(); n != 0 {
				t.Errorf("%d×%s %s: %d errors %v, first: %s", c.Clients, c.Dist, name, n, p.Errors, p.FirstError)
			}
			if l := p.Latency; l.P50 <= 0 || l.P50 > l.P99 || l.P99 > l.P999 || l.P999 > l.Max {
				t.Errorf("%d×%s %s: latency %+v, want 0 < p50 <= p99 <= p999 <= max", c.Clients, c.Dist, name, l)
			}
			acknowledged += p.Writes + p.WarmupWrites
		}
		// pgbench ships with the server binaries the suite needs anyway.
		if ce := c.Ceiling; ce == nil || ce.WritesPerSec <= 0 || ce.GroupSize < 1 || len(ce.Sweep) == 0 || c.CeilingRatio <= 0 {
			t.Errorf("%d×%s: the batched ceiling %+v (ratio %v), want writes", c.Clients, c.Dist, ce, c.CeilingRatio)
		} else {
			for _, s := range ce.Sweep {
				acknowledged += s.Writes
			}
		}
		if pg := c.Pgbench; pg == nil || pg.Writes == 0 || pg.ErrorCount() != 0 || c.PgbenchRatio <= 0 {
			t.Errorf("%d×%s: the pgbench yardstick %+v (ratio %v), want writes and no errors (report: %s)", c.Clients, c.Dist, pg, c.PgbenchRatio, rep.Pgbench)
		} else {
			acknowledged += pg.Writes + pg.WarmupWrites
		}
		checkOverhead(t, c, minWrites)
		if c.Overhead != nil {
			acknowledged += c.Overhead.Acknowledged
		}
		if want := min(4*rep.GOMAXPROCS, c.Clients); c.PoolMaxConns != want {
			t.Errorf("%d×%s: pool %d, want %d", c.Clients, c.Dist, c.PoolMaxConns, want)
		}
	}

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var sum, rows int64
	if err := conn.QueryRow(ctx, "SELECT sum(balance), count(*) FROM bench.accounts").Scan(&sum, &rows); err != nil {
		t.Fatal(err)
	}
	if rows != Accounts {
		t.Errorf("bench.accounts has %d rows, want %d", rows, Accounts)
	}
	if want := acknowledged * Amount; sum != want {
		t.Errorf("sum of balances = %d, want %d (%d acknowledged writes × %d)", sum, want, acknowledged, Amount)
	}
	var hot int64
	if err := conn.QueryRow(ctx, "SELECT balance FROM bench.accounts WHERE id = 1").Scan(&hot); err != nil {
		t.Fatal(err)
	}
	if hot == 0 {
		t.Error("account 1 has no writes, but the hot cells write only it")
	}

	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gateway tx/s", "pgbench tx/s", "uniform", "hot", "gateway's own", "RSS", "taking turns", "HTTP floor"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Cells) != len(rep.Cells) || back.Process.GatewayPath == nil || back.Cells[0].Overhead == nil {
		t.Errorf("JSON report does not read back (%v):\n%s", err, js.String())
	}
	t.Logf("progress:\n%s\nreport:\n%s", progress.String(), text.String())
}

// checkOverhead checks a cell's Overhead: measured in 1-client cells only,
// at least minWrites on each of the three paths, without errors, and its differences
// are those of its percentiles.
func checkOverhead(t *testing.T, c Cell, minWrites int64) {
	t.Helper()
	o := c.Overhead
	switch {
	case c.Clients != 1:
		if o != nil {
			t.Errorf("%d×%s: an overhead measured with %d clients", c.Clients, c.Dist, c.Clients)
		}
		return
	case o == nil:
		t.Errorf("1×%s: no overhead measured", c.Dist)
		return
	}
	if o.PerPath < minWrites || len(o.Errors) != 0 || o.Acknowledged < 3*o.PerPath {
		t.Errorf("1×%s overhead: %d writes per path, %d acknowledged in all, errors %v (first: %s); want at least %d per path, no errors",
			c.Dist, o.PerPath, o.Acknowledged, o.Errors, o.FirstError, minWrites)
	}
	for name, p := range map[string]Percentiles{"direct": o.Direct, "http floor": o.Floor, "gateway": o.Gateway} {
		if p.P50 <= 0 || p.P50 > p.P99 || p.P99 > p.P999 || p.P999 > p.Max {
			t.Errorf("1×%s overhead, %s: latency %+v, want 0 < p50 <= p99 <= p999 <= max", c.Dist, name, p)
		}
	}
	if o.GatewayP50 != o.Gateway.P50-o.Direct.P50 || o.FloorP50 != o.Floor.P50-o.Direct.P50 || o.OwnP50 != o.Gateway.P50-o.Floor.P50 {
		t.Errorf("1×%s overhead: differences %v, %v, %v do not follow from the p50s %+v", c.Dist, o.GatewayP50, o.FloorP50, o.OwnP50, o)
	}
}

// checkNoLeaks fails if Run left goroutines behind: gateways, pools, HTTP
// connections, lease keepalives and the etcd client are all its own.
func checkNoLeaks(t *testing.T, before int) {
	t.Helper()
	// Closed connections' goroutines wind down just after Close returns;
	// allow them a moment, and a little slack for runtime helpers.
	const slack = 3
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+slack && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+slack {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after Run, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// TestRunDrivesAnExternalGateway points Run at a gateway it did not start:
// the writes go through it, and its process costs are not claimed.
func TestRunDrivesAnExternalGateway(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{
		DatabaseURL:   dbURL,
		EtcdEndpoints: testenv.EtcdEndpoints(), KEKFile: testenv.KEKFile(t),
		Dir:       "../../../testdata/bench",
		Clients:   []int{1, 2},
		Dists:     []Dist{Zipf},
		Duration:  200 * time.Millisecond,
		MinWrites: 10,
	}
	e, err := setup(ctx, cfg) // migrates, so the gateway finds its schema
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	gw, err := startGateway(ctx, e, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.close()

	cfg.GatewayURL = gw.url // and its etcd, whose keys sign the accounts' tokens
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := rep.Err(); err != nil {
		t.Errorf("Report.Err = %v, want nil", err)
	}
	for _, c := range rep.Cells {
		checkOverhead(t, c, cfg.MinWrites)
	}
	if rep.Gateway != gw.url || rep.Process.GatewayPath != nil || rep.Process.RSSBytes != 0 {
		t.Errorf("report claims the external gateway's costs: gateway %q, process %+v", rep.Gateway, rep.Process)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "n/a") {
		t.Errorf("text report does not say the gateway's costs are n/a:\n%s", text.String())
	}
}

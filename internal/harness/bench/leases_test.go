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

// TestRunLeasesCyclesWhatItCounts runs a tiny lock-cycle matrix against
// real PostgreSQL and etcd and checks that it measured real cycles on both
// paths: every cycle's write, warmup included, is in the balances, etcd
// committed proposals for them, and the gateway's CPU was read. It asserts
// nothing about speed.
func TestRunLeasesCyclesWhatItCounts(t *testing.T) {
	const minCycles = 10
	dbURL := testenv.NewDatabase(t)
	endpoints := testenv.EtcdEndpoints()
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	rep, err := RunLeases(ctx, Config{
		DatabaseURL: dbURL, EtcdEndpoints: endpoints, KEKFile: testenv.KEKFile(t), Dir: "../../../testdata/bench",
		Clients: []int{1, 3}, Dists: []Dist{Uniform, Hot},
		Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond, MinWrites: minCycles,
		NoPgbench: true, Progress: &progress,
	})
	if err != nil {
		t.Fatalf("RunLeases: %v", err)
	}
	if err := rep.Err(); err != nil {
		t.Fatalf("Err = %v, want nil", err)
	}
	checkNoLeaks(t, before)
	if got, want := len(rep.Cells), 8; got != want {
		t.Fatalf("%d cells, want %d (2 client counts × 2 distributions × without and with a write)", got, want)
	}
	var written int64
	for _, c := range rep.Cells {
		for name, p := range map[string]LeasePath{"gateway": c.Gateway, "mutex": c.Mutex} {
			if p.Writes < minCycles || p.TxPerSec <= 0 {
				t.Errorf("%d×%s write=%v %s: %d cycles, want at least %d", c.Clients, c.Dist, c.Write, name, p.Writes, minCycles)
			}
			// A cycle takes a lease and a lock key at least.
			if p.ProposalsPerCycle < 2 {
				t.Errorf("%d×%s write=%v %s: %.1f etcd proposals per cycle, want at least 2", c.Clients, c.Dist, c.Write, name, p.ProposalsPerCycle)
			}
			if c.Write {
				written += p.Writes + p.WarmupWrites
			}
		}
		if c.Gateway.CPUPerCycle <= 0 || c.Gateway.CPUOf == "" {
			t.Errorf("%d×%s: the gateway's CPU per cycle was not read", c.Clients, c.Dist)
		}
		if c.Ratio <= 0 {
			t.Errorf("%d×%s: ratio %v", c.Clients, c.Dist, c.Ratio)
		}
	}
	// Every write of a cycle, on both paths, is in the balances once.
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var sum int64
	if err := conn.QueryRow(ctx, "SELECT coalesce(sum(balance), 0) FROM bench.accounts").Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if sum != written*Amount {
		t.Errorf("balances sum to %d, want %d: one per cycle's write", sum, written*Amount)
	}
	var text, doc bytes.Buffer
	if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "proposals/cycle") {
		t.Errorf("WriteText: %v\n%s", err, text.String())
	}
	if err := rep.WriteJSON(&doc); err != nil || !json.Valid(doc.Bytes()) {
		t.Errorf("WriteJSON: %v", err)
	}
}

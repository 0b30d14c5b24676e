package bench

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestRunClientLibrariesCountsWhatLanded runs the client-library bench
// tiny, Go's client and bare call and the Python client's driver, against
// real PostgreSQL and etcd: every cell measured writes without an error,
// and every write it counted is in the accounts' balances. It asserts
// nothing about speed. (The TypeScript driver speaks the same protocol;
// `fencegw bench --client-libraries` runs it.)
func TestRunClientLibrariesCountsWhatLanded(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is not installed (.ci/run installs it)")
	}
	dbURL := testenv.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	drivers := []ClientDriver{
		{Language: "go", Path: "client"},
		{Language: "go", Path: "bare"},
		{Language: "python", Path: "client", Argv: []string{"python3", "driver.py"}, Dir: "../../../clients/python/bench"},
	}
	rep, err := RunClientLibraries(ctx, Config{
		DatabaseURL: dbURL, EtcdEndpoints: testenv.EtcdEndpoints(), KEKFile: testenv.KEKFile(t), Dir: "../../../testdata/bench",
		Clients: []int{1, 3}, Dists: []Dist{Uniform}, Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond, NoPgbench: true, Progress: &progress,
	}, drivers, 2)
	if err != nil {
		t.Fatalf("RunClientLibraries: %v", err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	if got, want := len(rep.Cells), 6; got != want {
		t.Fatalf("%d cells, want %d (2 writer counts × 3 drivers)", got, want)
	}
	var counted int64
	for _, c := range rep.Cells {
		if c.Writes <= 0 || c.TxPerSec <= 0 || c.Latency.P50 <= 0 || c.Latency.P99 < c.Latency.P50 {
			t.Errorf("%s %s, %d writers: %+v; want writes, their rate and latencies", c.Language, c.Path, c.Writers, c)
		}
		if (c.Path == "client") != (c.OverBare > 0) && c.Language == "go" {
			t.Errorf("%s %s, %d writers: client/bare %.2f; want it for the client beside a bare call, and only there", c.Language, c.Path, c.Writers, c.OverBare)
		}
		counted += c.Writes
	}
	// Every write adds 1 to its account's balance, warmup's too: the
	// balances hold at least every write counted.
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var landed int64
	if err := conn.QueryRow(ctx, "SELECT sum(balance) FROM bench.accounts WHERE id <= 3").Scan(&landed); err != nil {
		t.Fatal(err)
	}
	if landed < counted {
		t.Errorf("the balances of accounts 1-3 grew by %d, fewer than the %d writes counted", landed, counted)
	}
	if !strings.Contains(progress.String(), "python") {
		t.Errorf("progress %q: no line of the Python driver", progress.String())
	}
}

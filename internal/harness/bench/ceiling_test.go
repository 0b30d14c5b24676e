package bench

import (
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestCeilingConnections: the ceiling runs on as many connections as the
// cell's gateways ran write transactions, whatever idle connections the
// run holds open to them (a run with 10,000 of them once reported a
// ceiling on 0 connections), never more than the cell's clients and
// never none.
func TestCeilingConnections(t *testing.T) {
	perGateway := max(2, runtime.GOMAXPROCS(0)) // fence's groupTransactions
	for _, tc := range []struct {
		name     string
		cfg      Config
		replicas int
		clients  int
		pool     int
		want     int
	}{
		{"in process", Config{}, 1, 64, 8, perGateway},
		{"in process, 10,000 idle connections", Config{IdleConnections: 10_000}, 1, 64, 8, perGateway},
		{"one replica, 10,000 idle connections", Config{IdleConnections: 10_000, Replicas: 1}, 1, 64, 8, perGateway},
		{"three replicas, 10,000 idle connections", Config{IdleConnections: 10_000, Replicas: 3}, 3, 64, 8, 3 * perGateway},
		{"the gateway's write transactions set", Config{IdleConnections: 10_000, WriteTransactions: 5}, 1, 64, 8, 5},
		{"group commit off: the pool", Config{IdleConnections: 10_000, NoGroupCommit: true}, 1, 64, 8, 8},
		{"one client", Config{IdleConnections: 10_000}, 1, 1, 1, 1},
		{"a running gateway (no replicas counted)", Config{IdleConnections: 10_000, GatewayURL: "http://127.0.0.1:8080"}, 0, 16, 8, perGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ceilingConnections(tc.cfg, tc.replicas, tc.clients, tc.pool); got != tc.want {
				t.Fatalf("ceilingConnections = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestCeilingNotMeasured: a ceiling whose sweep measured nothing says why,
// in the report, and leaves the cell's gateway figures valid; a cell
// whose ceiling has neither figures nor a reason is invalid.
func TestCeilingNotMeasured(t *testing.T) {
	cell := Cell{Clients: 64, Dist: Uniform,
		Direct:  Path{Writes: 10, TxPerSec: 5},
		Gateway: Path{Writes: 20, TxPerSec: 10},
		Ceiling: &Ceiling{GroupSize: 28, Sweep: []Sweep{{Connections: 2, Errors: 1, FirstError: "pgbench: no transaction completed"}}},
	}
	if cell.Valid() {
		t.Fatal("a ceiling without figures or a reason: valid, want invalid")
	}
	cell.Ceiling.Error = "the batched ceiling could not be measured: on 2 connections: pgbench: no transaction completed"
	if !cell.Valid() {
		t.Fatal("a ceiling that says why it has no figures made the cell invalid; the gateway's figures stand")
	}
	r := Report{Cells: []Cell{cell}}
	var out strings.Builder
	if err := r.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.Contains(text, "none (28×2: below)") || !strings.Contains(text, "ceiling, 64×uniform: the batched ceiling could not be measured: on 2 connections: pgbench: no transaction completed") {
		t.Fatalf("the report does not say why the ceiling is missing:\n%s", text)
	}
}

// TestCeilingSweep: the ceiling runs with no more writes in flight than
// the cell's clients (k a connection): the gateway's write transactions
// and twice as many where they fit, else as many connections as fit.
func TestCeilingSweep(t *testing.T) {
	for _, tc := range []struct {
		k, transactions, clients int
		want                     []int
	}{
		{1, 1, 1, []int{1}},      // one client: one connection, not two
		{8, 2, 16, []int{2}},     // 16 clients in groups of 8: two transactions, not four
		{31, 2, 64, []int{2}},    // 62 of 64 in flight
		{4, 2, 16, []int{2, 4}},  // both fit
		{20, 2, 16, []int{1}},    // a mean group above what two transactions can hold
		{3, 6, 64, []int{6, 12}}, // three replicas
		{40, 2, 16, []int{1}},    // never none
		{1, 1, 4, []int{1, 2}},   // a gateway that grouped nothing
		{16, 2, 64, []int{2, 4}}, // 64 in flight at most
		{17, 2, 64, []int{2}},    // 68 would not fit
	} {
		if got := ceilingSweep(tc.k, tc.transactions, tc.clients); !slices.Equal(got, tc.want) {
			t.Errorf("ceilingSweep(k %d, %d transactions, %d clients) = %v, want %v", tc.k, tc.transactions, tc.clients, got, tc.want)
		}
	}
}

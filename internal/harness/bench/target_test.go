package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestConfigRefusesBadTargets: each mistake in the load's shape is
// ErrConfig, caught before anything starts.
func TestConfigRefusesBadTargets(t *testing.T) {
	base := Config{Dir: "x", Clients: []int{1}, Dists: []Dist{Uniform}, Duration: time.Second}
	for name, change := range map[string]func(*Config){
		"negative replicas":         func(c *Config) { c.Replicas = -1 },
		"too many replicas":         func(c *Config) { c.Replicas = maxReplicas + 1 },
		"replicas and a gateway":    func(c *Config) { c.Replicas, c.GatewayURL = 2, "http://127.0.0.1:8080" },
		"replicas without coalesce": func(c *Config) { c.Replicas, c.NoCoalesce = 1, true },
		"a pid without a gateway":   func(c *Config) { c.GatewayPID = 42 },
		"a negative pid":            func(c *Config) { c.GatewayPID, c.GatewayURL = -1, "http://127.0.0.1:8080" },
		"negative idle connections": func(c *Config) { c.IdleConnections = -1 },
		"too many idle connections": func(c *Config) { c.IdleConnections = maxIdleConnections + 1 },
		"wrk over two replicas":     func(c *Config) { c.Wrk, c.Replicas = true, 2 },
		"wrk open loop":             func(c *Config) { c.Wrk, c.Rate = true, 100 },
	} {
		cfg := base
		change(&cfg)
		if err := cfg.CheckLoad(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: CheckLoad = %v, want ErrConfig", name, err)
		}
	}
	ok := base
	ok.Replicas, ok.Wrk, ok.IdleConnections, ok.NoGroupCommit = 1, true, 10, true
	if err := ok.CheckLoad(); err != nil {
		t.Errorf("one replica, wrk, idle connections, no group commit: %v", err)
	}
}

// TestRunHoldsIdleConnections: with the gateway in this process, a cell
// measured beside idle connections reports this process's RSS before
// and with them, and its writes are as valid as without.
func TestRunHoldsIdleConnections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{
		DatabaseURL: testenv.NewDatabase(t), EtcdEndpoints: testenv.EtcdEndpoints(), KEKFile: testenv.KEKFile(t), Dir: "../../../testdata/bench",
		Clients: []int{2}, Dists: []Dist{Hot}, Duration: 100 * time.Millisecond, MinWrites: 10, NoPgbench: true,
		IdleConnections: 50,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := rep.Err(); err != nil {
		t.Errorf("Report.Err = %v, want nil", err)
	}
	m := rep.Cells[0].Memory
	if m == nil || m.Note != "" || m.IdleConnections != 50 || m.RSSBefore <= 0 || m.RSSIdle <= 0 || m.RSSEnd <= 0 {
		t.Errorf("memory %+v: want this process's RSS around 50 idle connections", m)
	}
}

// TestFileLimitBoundsConnections: a run asking more connections than the
// process may open files is refused before it starts.
func TestFileLimitBoundsConnections(t *testing.T) {
	if raiseFileLimit() == 0 {
		t.Skip("the open-file limit is unknown here")
	}
	if err := checkFileLimit(1 << 40); !errors.Is(err, ErrConfig) {
		t.Errorf("checkFileLimit(2^40) = %v, want ErrConfig", err)
	}
	if err := checkFileLimit(10); err != nil {
		t.Errorf("checkFileLimit(10) = %v, want nil", err)
	}
}

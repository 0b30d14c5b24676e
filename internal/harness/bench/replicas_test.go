package bench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// buildFencegw builds the fencegw binary the replicas run: this test's
// own executable is not one.
func buildFencegw(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fencegw")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/fencegw").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// running lists the processes that run bin, from /proc.
func running(t *testing.T, bin string) []string {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		if cmdline, err := os.ReadFile("/proc/" + d.Name() + "/cmdline"); err == nil && strings.HasPrefix(string(cmdline), bin+"\x00") {
			pids = append(pids, d.Name())
		}
	}
	return pids
}

// TestRunSpreadsOverReplicas runs a tiny cell over two `fencegw serve`
// processes with a few idle connections: each replica acknowledged
// writes of its own, the report says so and gives their memory, and no
// replica outlives the run.
func TestRunSpreadsOverReplicas(t *testing.T) {
	bin := buildFencegw(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{
		DatabaseURL: testenv.NewDatabase(t), EtcdEndpoints: testenv.EtcdEndpoints(), KEKFile: testenv.KEKFile(t), Dir: "../../../testdata/bench",
		Clients: []int{4}, Dists: []Dist{Uniform}, Duration: 200 * time.Millisecond, MinWrites: 20, NoPgbench: true,
		Replicas: 2, Binary: bin, IdleConnections: 6,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := rep.Err(); err != nil {
		t.Errorf("Report.Err = %v, want nil", err)
	}
	c := rep.Cells[0]
	if rep.Replicas != 2 || len(c.Replicas) != 2 {
		t.Fatalf("report: %d replicas, cell %+v; want 2", rep.Replicas, c.Replicas)
	}
	var total int64
	for _, r := range c.Replicas {
		if r.Writes == 0 {
			t.Errorf("replica %s acknowledged no write: the load did not reach it", r.Addr)
		}
		total += r.Writes
	}
	if pids := running(t, bin); len(pids) > 0 {
		t.Errorf("replicas still run after Run: pids %v", pids)
	}
	if total < c.Gateway.Writes {
		t.Errorf("the replicas acknowledged %d writes together, fewer than the %d measured", total, c.Gateway.Writes)
	}
	if m := c.Memory; m == nil || m.Note != "" || m.IdleConnections != 6 || m.RSSIdle <= 0 || m.RSSEnd <= 0 {
		t.Errorf("memory %+v: want the replicas' RSS around 6 idle connections", m)
	}
	if rep.Process.GatewayPath != nil {
		t.Errorf("the report claims the replicas' allocations: %+v", rep.Process.GatewayPath)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 fencegw serve processes", "replicas: the gateway path's writes", "per idle conn"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

// TestReplicasThatFailToStartLeaveNone: a replica that exits before it is
// ready fails the run with the end of its log, and the others are
// stopped.
func TestReplicasThatFailToStartLeaveNone(t *testing.T) {
	bin := buildFencegw(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := Config{
		DatabaseURL: testenv.NewDatabase(t), EtcdEndpoints: testenv.EtcdEndpoints(), KEKFile: testenv.KEKFile(t), Dir: "../../../testdata/bench",
		Clients: []int{1}, Dists: []Dist{Uniform}, Duration: 100 * time.Millisecond, NoPgbench: true,
		Replicas: 2, Binary: bin, ReplicaArgs: []string{"--no-such-flag"},
	}
	e, err := setup(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	_, err = e.startReplicas(ctx, 1)
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "no-such-flag") {
		t.Fatalf("startReplicas with a bad flag = %v, want the replica's exit and its log", err)
	}
	if pids := running(t, bin); len(pids) > 0 {
		t.Errorf("replicas left running: pids %v", pids)
	}
}

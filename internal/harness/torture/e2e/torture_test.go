// Package e2e runs `fencegw torture` as an operator would, with the real
// binary: the fenced runs must pass under every fault and the controls
// must fail. Its own package, so that these long runs go beside the
// rest of the suite rather than inside cmd/fencegw's time.
package e2e_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/internal/harness/torture/check"
)

// buildFencegw builds the binary under test into the test's directory.
// It first stats every Go source of the module: go test caches a
// package's result against the files its test read, and the binary's
// sources are read by the go build it runs, not by the test, so without
// this a change to the gateway or the torture harness would replay a
// result cached before it.
func buildFencegw(t *testing.T) string {
	t.Helper()
	root := "../../../.."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" && path != root):
			return filepath.SkipDir
		case !d.IsDir() && (strings.HasSuffix(path, ".go") || d.Name() == "go.mod" || d.Name() == "go.sum"):
			_, err = os.Stat(path)
		}
		return err
	})
	if err != nil {
		t.Fatalf("reading the module's sources: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "fencegw")
	out, err := exec.Command("go", "build", "-o", bin, "../../../../cmd/fencegw").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// torture runs `fencegw torture --json args…` (env added to the test's
// environment) and returns its report, its log and how it exited; a run
// that printed no report fails the test.
func torture(t *testing.T, bin string, env []string, args ...string) (check.Report, string, error) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"torture", "--json"}, args...)...)
	cmd.Env = append(cmd.Environ(), env...)
	var out, logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &logs
	err := cmd.Run()
	var r check.Report
	if derr := json.NewDecoder(&out).Decode(&r); derr != nil {
		t.Fatalf("torture %v: no report (%v); exit %v\n%s", args, derr, err, &logs)
	}
	return r, logs.String(), err
}

// TestTortureCIProfile runs the CI profile three times with the real
// binary. With fencing — once as it is, once under load with coalescing
// and group commit carrying many writes (more workers and bigger bursts
// on few resources, one write transaction in flight per gateway) — the
// checker must find nothing under every fault the nemesis has: workers
// paused, suspended and throttled, their wall clocks stepped, gateways
// killed and frozen mid-transaction, etcd members killed and frozen and
// etcd's quorum lost, PostgreSQL restarted, a gateway partitioned from
// etcd or PostgreSQL, the network slowed, the gateways' clocks for
// max_hold and the lease reaper moved until they revoked live holders'
// leases — with the workers retrying
// writes under their keys, some beside an attempt in flight, and their
// answers held to agree. With fencing off, the same run must show stale
// writes: a checker that cannot fail would prove nothing.
func TestTortureCIProfile(t *testing.T) {
	bin := buildFencegw(t)
	run := func(extra ...string) (check.Report, string, error) {
		return torture(t, bin, nil, append([]string{"--seed", "1"}, extra...)...)
	}

	fenced, logs, err := run()
	t.Logf("fenced: %s faults %v skipped %v events %v leases %v shared transactions %v retries %v", fenced.Verdict, fenced.Faults, fenced.Skipped, fenced.Events, fenced.Leases, fenced.Batching, fenced.Retries)
	if err != nil || !fenced.OK() {
		t.Fatalf("with fencing: %v, %s\n%+v\n%s", err, fenced.Verdict, fenced.Violations, logs)
	}
	if fenced.Events["ok"] < 20 || fenced.Faults["pause-worker"] < 5 || fenced.Faults["late-holder"] < 1 {
		t.Fatalf("the fenced run did too little to prove anything: %v events, %v faults", fenced.Events, fenced.Faults)
	}
	requireEveryFault(t, fenced)

	load := []string{"--coalesce", "--group-commit", "--workers", "16", "--resources", "6", "--burst", "12", "--max-write-transactions", "1"}
	coalesced, logs, err := run(load...)
	t.Logf("fenced, under load, coalesced, group commit: %s faults %v events %v shared transactions %v retries %v", coalesced.Verdict, coalesced.Faults, coalesced.Events, coalesced.Batching, coalesced.Retries)
	if err != nil || !coalesced.OK() {
		t.Fatalf("with fencing, coalescing and group commit: %v, %s\n%+v\n%s", err, coalesced.Verdict, coalesced.Violations, logs)
	}
	// How many writes share a transaction depends on how the scheduler
	// interleaves the workers, so the bar is that shared transactions carried a good
	// part of them under the faults, not a share an idle machine reaches.
	if b := coalesced.Batching; b == nil || b.Shared < 20 || 4*b.Shared < b.Writes {
		t.Fatalf("under load, coalescing and group commit carried too few writes: %v", b)
	}
	// The workers retried writes under their keys, some beside an
	// attempt in flight, and were answered replays the checker held to
	// the first answers.
	for _, stat := range []string{"writes-retried", "attempts-beside-one-in-flight", "answers-replayed"} {
		if fenced.Retries[stat]+coalesced.Retries[stat] < 1 {
			t.Errorf("no %s in the fenced runs: retries %v and %v", stat, fenced.Retries, coalesced.Retries)
		}
	}

	// The workers' stale writes need a random pause to land between a
	// lease and its write, which a run on a loaded machine can miss; the
	// nemesis's late holder writes after its successor in every run, so
	// the checker must report that one whatever the pauses did.
	control, logs, err := run(append([]string{"--unsafe-no-fence", "--duration", "15s"}, controlOnly...)...)
	t.Logf("control: %s faults %v events %v", control.Verdict, control.Faults, control.Events)
	if err != nil || control.OK() {
		t.Fatalf("with fencing off: %v, %s; want violations found\n%s", err, control.Verdict, logs)
	}
	late := slices.ContainsFunc(control.Violations, func(v check.Violation) bool {
		return v.Kind == check.KindStaleWrite && v.Resource == "res/nemesis"
	})
	if !late {
		t.Fatalf("with fencing off the late holder's write (res/nemesis) is not among the violations: %+v", control.Violations)
	}
}

// controlOnly turns off the fault kinds a control run does not need to
// fail: a run goes on until every kind it asks for has happened, and a
// control's purpose is the violations its one missing safeguard lets in,
// not the faults the fenced runs already met.
var controlOnly = []string{"--kill-gateways=false", "--etcd-faults=false", "--restart-postgres=false", "--slow-network=false",
	"--partitions=false", "--pause-gateways=false", "--quorum-loss=false", "--clock-faults=false", "--throttle=false", "--backend-faults=false"}

// requireEveryFault fails the test unless the run injected every fault
// kind the CI profile has (the throttle may be skipped where the machine
// allows no cgroup, with the reason in the report), and its workers'
// clients met the cases only one of their clocks could see: after a
// suspend, the lease past its deadline on the wall clock alone; after a
// wall clock stepped back, on the monotonic clock alone.
func requireEveryFault(t *testing.T, r check.Report) {
	t.Helper()
	for _, kind := range []string{"kill-gateway", "kill-etcd-leader", "kill-etcd-member", "pause-etcd-member", "etcd-quorum-loss", "slow-network", "partition-etcd", "partition-etcd-one-way",
		"partition-postgres", "partition-postgres-one-way", "pause-gateway", "wall-clock-forward", "wall-clock-back",
		"suspend-worker", "gateway-clock-forward", "gateway-clock-back", "gateway-clock-fast", "throttle-worker", "restart-postgres",
		"cancel-backend", "terminate-backend", "statement-timeout", "idle-in-transaction-timeout"} {
		if r.Faults[kind] < 1 && (kind != "throttle-worker" || r.Skipped[kind] == "") {
			t.Errorf("no %s among the faults %v (skipped: %v)", kind, r.Faults, r.Skipped)
		}
	}
	if r.Leases["past-on-wall-clock-only"] < 1 || r.Leases["past-on-monotonic-clock-only"] < 1 {
		t.Errorf("the clock faults did not reach a write: leases %v", r.Leases)
	}
}

// TestTortureFailoverProfile: with a synchronous standby, failovers (the
// primary SIGKILLed, the standby promoted, a new standby made), every
// other one after a standby outage whose waits for it the nemesis cancels
// and terminates (committed on the primary alone), between the CI
// profile's faults — the primary restarted in place, the network to both
// servers slowed or partitioned among them, the gateways' backends
// cancelled in COMMIT — lose nothing and let no stale write in; with
// gateways that ignore commit warnings, the outages' cancelled commits
// are acknowledged and the checker finds them lost; with an asynchronous
// standby whose
// WAL is held back (the primary killed only after committing writes the
// standby never received, one of them the nemesis's with the newer of two
// tokens it took), the checker finds the acknowledged writes the promotion
// lost and the older token's write let in after it, and reads, right
// after the promotion, the fence of the nemesis's resource below the
// token of its write acknowledged before: the check can fail, and not by
// luck.
func TestTortureFailoverProfile(t *testing.T) {
	bin := buildFencegw(t)
	run := func(extra ...string) (check.Report, string, error) {
		return torture(t, bin, nil, append([]string{"--seed", "1", "--failover", "--failover-every", "5s", "--min-failovers", "2", "--duration", "20s", "--coalesce", "--group-commit"}, extra...)...)
	}
	synced, logs, err := run()
	t.Logf("synchronous standby: %s faults %v events %v", synced.Verdict, synced.Faults, synced.Events)
	if err != nil || !synced.OK() {
		t.Fatalf("failovers to a synchronous standby: %v, %s\n%+v\n%s", err, synced.Verdict, synced.Violations, logs)
	}
	if synced.Faults["failover"] < 2 || synced.Events["ok"] < 10 {
		t.Fatalf("the failover run did too little to prove anything: %v events, %v faults", synced.Events, synced.Faults)
	}
	requireEveryFault(t, synced) // slow network, partitions and restarts of the primary among them
	if strings.Count(synced.FenceReads, "after failover") != synced.Faults["failover"] || !strings.HasSuffix(synced.FenceReads, "the end") {
		t.Errorf("the fences were read %q in a run of %d failovers, want after each and at the end", synced.FenceReads, synced.Faults["failover"])
	}
	if synced.Faults["standby-outage"] < 1 || synced.Faults["cancel-syncrep"] < 1 || synced.Faults["cancel-commit"] < 1 {
		t.Errorf("no standby outage before a failover, or no wait for the standby cancelled: %v", synced.Faults)
	}

	control, logs, err := torture(t, bin, nil, append([]string{"--seed", "1", "--failover", "--failover-every", "5s", "--min-failovers", "1", "--duration", "10s",
		"--async-standby"}, controlOnly...)...)
	t.Logf("asynchronous standby: %s faults %v events %v", control.Verdict, control.Faults, control.Events)
	kinds := map[string]int{}
	for _, v := range control.Violations {
		kinds[v.Kind]++
	}
	if err != nil || kinds[check.KindLostWrite] == 0 || kinds[check.KindFenceWentBack] == 0 || kinds[check.KindFenceBelowAcknowledged] == 0 {
		t.Fatalf("failovers to a lagging asynchronous standby: want lost writes, a stale write let in and a fence read below an acknowledged token (%v): %s\n%s", err, control.Verdict, logs)
	}

	// Gateways that answer 200 for a COMMIT PostgreSQL warned about, and
	// every failover after a standby outage whose waits the nemesis
	// cancels: its own write with the newer token among them, then lost.
	ignoring, logs, err := torture(t, bin, nil, append(append([]string{"--seed", "1", "--failover", "--failover-every", "5s", "--min-failovers", "1", "--duration", "10s",
		"--unsafe-ignore-commit-warnings"}, controlOnly...), "--backend-faults=true")...)
	t.Logf("commit warnings ignored: %s faults %v events %v", ignoring.Verdict, ignoring.Faults, ignoring.Events)
	kinds = map[string]int{}
	for _, v := range ignoring.Violations {
		kinds[v.Kind]++
	}
	if err != nil || kinds[check.KindLostWrite] == 0 || kinds[check.KindFenceWentBack] == 0 || kinds[check.KindFenceBelowAcknowledged] == 0 {
		t.Fatalf("standby outages, their waits cancelled, commit warnings ignored: want lost writes, a stale write let in and a fence read below an acknowledged token (%v): %s\n%s", err, ignoring.Verdict, logs)
	}
}

// TestTortureEtcdRollbackProfile: etcd restored from an earlier snapshot
// under load (revisions issued again) halts the gateways; the nemesis runs
// fencegw epoch bump, the run goes on, and the checker finds nothing: no
// write with a re-issued token landed over a newer fence.
func TestTortureEtcdRollbackProfile(t *testing.T) {
	bin := buildFencegw(t)
	r, logs, err := torture(t, bin, nil, "--seed", "1", "--etcd-rollback", "--rollback-every", "8s", "--min-rollbacks", "1", "--duration", "20s", "--coalesce", "--group-commit")
	t.Logf("etcd rollback: %s faults %v events %v", r.Verdict, r.Faults, r.Events)
	if err != nil || !r.OK() {
		t.Fatalf("etcd rollbacks: %v, %s\n%+v\n%s", err, r.Verdict, r.Violations, logs)
	}
	if r.Faults["etcd-rollback"] < 1 || r.Faults["halted"] != r.Faults["etcd-rollback"] || r.Faults["epoch-bump"] != r.Faults["etcd-rollback"] {
		t.Fatalf("every rollback must halt the gateways and be repaired by an epoch bump: %v\n%s", r.Faults, logs)
	}
}

// TestTortureEtcdTLS: with --etcd-tls the torture's etcd cluster serves
// TLS only and requires client certificates, as production etcd does; the
// gateways, the nemesis's snapshots and leader look-ups, and the epoch
// bump after a rollback all reach it with the run's certificates, under
// the CI profile's faults (etcd members killed and frozen among them),
// and the checker finds nothing. A gateway without them could not serve a
// single lease; one given the etcd user of the shell that runs the
// torture could not start.
func TestTortureEtcdTLS(t *testing.T) {
	bin := buildFencegw(t)
	// An operator's etcd settings, which the gateways would read and fail
	// on (no such file) were they not kept from them.
	r, logs, err := torture(t, bin, []string{"FENCEGW_ETCD_USER=operator", "FENCEGW_ETCD_PASSWORD_FILE=/nonexistent/etcd-password"},
		"--seed", "1", "--etcd-tls", "--etcd-rollback", "--rollback-every", "8s", "--min-rollbacks", "1", "--duration", "20s")
	t.Logf("etcd over TLS: %s faults %v events %v", r.Verdict, r.Faults, r.Events)
	if err != nil || !r.OK() {
		t.Fatalf("etcd over TLS: %v, %s\n%+v\n%s", err, r.Verdict, r.Violations, logs)
	}
	if r.Events["ok"] < 20 || r.Faults["epoch-bump"] < 1 || r.Faults["etcd-rollback"] < 1 {
		t.Fatalf("the run did too little over TLS to prove anything: %v events, %v faults\n%s", r.Events, r.Faults, logs)
	}
}

// TestTortureSemaphore: workers hold permits of semaphores of 2 beside
// locks, paused past their leases, and a late holder of a permit writes
// after its slot's next holder. With fencing the checker finds nothing:
// no stale write in any permit slot, never more than 2 writers of one
// semaphore at once. With fencing off it must find the late permit
// holder's stale write in its slot, and three writers of its semaphore
// of two at once.
func TestTortureSemaphore(t *testing.T) {
	bin := buildFencegw(t)
	run := func(extra ...string) (check.Report, string, error) {
		return torture(t, bin, nil, append([]string{"--seed", "1", "--duration", "15s", "--semaphores", "60", "--strict", "0", "--transfers", "0",
			"--kill-gateways=false", "--etcd-faults=false", "--restart-postgres=false", "--slow-network=false", "--partitions=false",
			"--pause-gateways=false", "--quorum-loss=false", "--clock-faults=false", "--throttle=false", "--backend-faults=false"}, extra...)...)
	}
	fenced, logs, err := run()
	t.Logf("fenced: %s faults %v events %v", fenced.Verdict, fenced.Faults, fenced.Events)
	if err != nil || !fenced.OK() {
		t.Fatalf("semaphores with fencing: %v, %s\n%+v\n%s", err, fenced.Verdict, fenced.Violations, logs)
	}
	if fenced.Events["ok"] < 20 || fenced.Faults["pause-worker"] < 5 || fenced.Faults["late-permit-holder"] < 1 {
		t.Fatalf("the fenced run did too little to prove anything: %v events, %v faults", fenced.Events, fenced.Faults)
	}
	control, logs, err := run("--unsafe-no-fence")
	t.Logf("control: %s faults %v events %v", control.Verdict, control.Faults, control.Events)
	if err != nil || control.OK() {
		t.Fatalf("semaphores with fencing off: %v, %s; want violations found\n%s", err, control.Verdict, logs)
	}
	late := slices.ContainsFunc(control.Violations, func(v check.Violation) bool {
		return v.Kind == check.KindStaleWrite && strings.HasPrefix(v.Resource, "sem/nemesis#")
	})
	crowd := slices.ContainsFunc(control.Violations, func(v check.Violation) bool {
		return v.Kind == check.KindTooManyHolders && v.Resource == "sem/nemesis"
	})
	if !late || !crowd {
		t.Fatalf("with fencing off the late permit holder's stale write (sem/nemesis#…: %t) and its three writers of sem/nemesis at once (%t) are not both among the violations: %+v",
			late, crowd, control.Violations)
	}
}

// TestTortureWireFront: every worker write, and the late holder's, goes
// through the gateways' SQL front (serve --pg-listen) as an application's
// own transaction (SET LOCAL fencegw.tokens, its statements, COMMIT)
// under the CI profile's faults; the checker must find nothing. The
// control sends the same statements without the fence, and must show
// the late holder's stale write, which it makes in every run.
func TestTortureWireFront(t *testing.T) {
	bin := buildFencegw(t)
	args := []string{"--seed", "1", "--wire", "100", "--transfers", "0", "--duration", "15s"}
	fenced, logs, err := torture(t, bin, nil, args...)
	t.Logf("through the SQL front: %s faults %v events %v", fenced.Verdict, fenced.Faults, fenced.Events)
	if err != nil || !fenced.OK() {
		t.Fatalf("through the SQL front, with fencing: %v, %s\n%+v\n%s", err, fenced.Verdict, fenced.Violations, logs)
	}
	if fenced.Events["ok"] < 20 || fenced.Faults["pause-worker"] < 3 {
		t.Fatalf("the run did too little to prove anything: %v events, %v faults", fenced.Events, fenced.Faults)
	}
	control, logs, err := torture(t, bin, nil, append(args, "--unsafe-no-fence")...)
	t.Logf("through the SQL front, control: %s events %v", control.Verdict, control.Events)
	if err != nil || control.OK() {
		t.Fatalf("without the fence: %v, %s; want violations found\n%s", err, control.Verdict, logs)
	}
	late := slices.ContainsFunc(control.Violations, func(v check.Violation) bool {
		return v.Kind == check.KindStaleWrite && v.Resource == "res/nemesis"
	})
	if !late {
		t.Fatalf("without the fence, the late holder's write through the front (res/nemesis) is not among the violations: %+v", control.Violations)
	}
}

// TestTortureLeaseChurn: lease-churn workers alone — many short leases on
// many resources, one write each, released, left to expire or paused past
// them — while the nemesis kills gateways and etcd leaders and followers,
// freezes etcd members, pauses the holders, and stops a holder at the end
// of its critical section until it has taken the next lease on its
// resource and written with it (late-churn-holder). With fencing the
// checker finds nothing: per churn resource, the grants' tokens grow in
// grant order, the applied tokens strictly in commit order (no write of
// an older lease after a newer one's, no token written by two leases).
// With fencing off and the holders paused only, it must find a stale
// write on a churn resource: the late churn holder's, which every run
// makes, not by luck.
func TestTortureLeaseChurn(t *testing.T) {
	bin := buildFencegw(t)
	churn := []string{"--seed", "1", "--workers", "0", "--lease-churn", "6", "--churn-resources", "12"}
	// The control's faults, and gateway kills and etcd's faults.
	faults := slices.DeleteFunc(slices.Clone(controlOnly), func(f string) bool { return f == "--kill-gateways=false" || f == "--etcd-faults=false" })
	fenced, logs, err := torture(t, bin, nil, append(append(churn, "--duration", "20s"), faults...)...)
	t.Logf("fenced: %s faults %v churn %v events %v", fenced.Verdict, fenced.Faults, fenced.Churn, fenced.Events)
	if err != nil || !fenced.OK() {
		t.Fatalf("lease churn with fencing: %v, %s\n%+v\n%s", err, fenced.Verdict, fenced.Violations, logs)
	}
	c, f := fenced.Churn, fenced.Faults
	if c["grants"] < 20 || c["writes-applied"] < 10 || c["resources-written"] < 4 || c["leases-left-to-expire"]+c["holders-paused-past-ttl"] < 1 {
		t.Errorf("the churn did too little to prove anything: %v", c)
	}
	if f["late-churn-holder"] < 1 || f["pause-worker"] < 3 || f["kill-gateway"] < 1 || f["kill-etcd-leader"] < 1 {
		t.Errorf("the nemesis did too little to prove anything: %v", f)
	}

	control, logs, err := torture(t, bin, nil, append(append(churn, "--duration", "10s", "--unsafe-no-fence"), controlOnly...)...)
	t.Logf("control: %s faults %v churn %v", control.Verdict, control.Faults, control.Churn)
	if err != nil || control.OK() {
		t.Fatalf("lease churn with fencing off: %v, %s; want violations found\n%s", err, control.Verdict, logs)
	}
	stale := slices.ContainsFunc(control.Violations, func(v check.Violation) bool {
		return v.Kind == check.KindStaleWrite && strings.HasPrefix(v.Resource, "churn/")
	})
	if !stale {
		t.Fatalf("with fencing off no stale write on a churn resource (the late churn holder's) is among the violations: %+v", control.Violations)
	}
}

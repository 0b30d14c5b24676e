package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/internal/harness/torture"
	"github.com/fencegw/fencegw/internal/harness/torture/check"
)

func tortureCommand() *cobra.Command {
	cfg := torture.Defaults()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "torture [flags]",
		Short: "run gateways and workers under faults and check that no stale write landed",
		Long: `Runs gateways, workers and a 3-member etcd cluster (all processes) against
a throwaway PostgreSQL on loopback, injects faults (workers frozen past
their lease, gateways killed or frozen mid-transaction, etcd leader or
followers killed or frozen, etcd's quorum lost, PostgreSQL restarted,
the gateways' PostgreSQL backends cancelled or terminated or given a
short statement or idle-in-transaction timeout, the gateways'
PostgreSQL traffic held back by a delaying proxy, a
gateway partitioned from etcd or PostgreSQL one way or both, workers'
wall clocks stepped, workers suspended with their monotonic clock held
back, the gateways' clocks for max_hold and the lease reaper stepped, a
worker throttled by a cgroup CPU limit where the machine allows),
and acts as a late holder itself (it writes with a token after the next
token's write), for --duration, then checks from the database
that no stale write landed (on strict resources an equal token is
stale), every row carries the token its write was sent with, no
acknowledged write was lost, no write was applied twice, no transfer was
applied on one side only, every balance is its start plus what its
applied writes moved, every fence (read at the end, and after each
failover) is at or above the tokens applied and acknowledged on its
resource, and no worker's client called a lease valid past
its deadline on either clock. With --lease-churn, lease-churn workers
take many short leases on churn/r0.., one write each, and the checker
holds each such resource's grants and applied writes to strictly
increasing tokens. With --failover,
PostgreSQL is a primary and a streaming standby behind one multi-host URL,
and the nemesis kills the primary (SIGKILL) and promotes the standby every
--failover-every instead of restarting it. Exit status 0 when the verdict
is the expected one: no violations, or — with --unsafe-no-fence (fencing
off), --async-standby or --unsafe-ignore-commit-warnings (failovers that
lose acknowledged commits), the control runs — at least one. A fenced run that ends at its time bound
with fewer failovers or rollbacks than --min-failovers or --min-rollbacks
asked for, without one late holder's write answered, or without one of
each fault kind it asks for (a kind this machine cannot inject, such as
--throttle without a writable cgroup, is reported as skipped instead),
exits 1 too: its PASS covers fewer faults than asked.`,
		Example: `  fencegw torture --duration 2m --kill-gateways --etcd-faults
  fencegw torture --unsafe-no-fence     # the control: must find violations
  fencegw torture --failover --json > report.json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTorture(cmd.Context(), cfg, asJSON, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "worker processes (0 with --lease-churn: lease-churn workers only)")
	fs.IntVar(&cfg.Resources, "resources", cfg.Resources, "resources they contend for")
	fs.IntVar(&cfg.Gateways, "gateways", cfg.Gateways, "gateway processes")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long the workers and the nemesis run")
	fs.DurationVar(&cfg.TTL, "ttl", cfg.TTL, "the workers' lease TTL")
	fs.Int64Var(&cfg.Seed, "seed", cfg.Seed, "random seed (workers and nemesis)")
	fs.DurationVar(&cfg.FaultEvery, "fault-every", cfg.FaultEvery, "how often the nemesis acts")
	fs.BoolVar(&cfg.KillGateways, "kill-gateways", cfg.KillGateways, "let the nemesis SIGKILL and restart gateways")
	fs.BoolVar(&cfg.EtcdFaults, "etcd-faults", cfg.EtcdFaults, "let the nemesis kill the etcd leader, kill a follower and freeze a member (kill-etcd-leader, kill-etcd-member, pause-etcd-member: each a kind of its own that the run must have)")
	fs.BoolVar(&cfg.EtcdTLS, "etcd-tls", false, "run the etcd cluster as production etcd runs: TLS, and client certificates required; the gateways and epoch bump connect with one")
	fs.BoolVar(&cfg.RestartPostgres, "restart-postgres", cfg.RestartPostgres, "let the nemesis restart PostgreSQL (at most twice)")
	fs.BoolVar(&cfg.UnsafeNoFence, "unsafe-no-fence", false, "control run: gateways with fencing OFF; the checker must find violations")
	fs.IntVar(&cfg.Burst, "burst", cfg.Burst, "each lease sends 1 to this many writes at once")
	fs.BoolVar(&cfg.SlowNetwork, "slow-network", cfg.SlowNetwork, "let the nemesis hold the gateways' PostgreSQL traffic (a delaying proxy) for up to two TTLs")
	fs.BoolVar(&cfg.Partitions, "partitions", cfg.Partitions, "let the nemesis cut a gateway off from etcd or PostgreSQL, both ways or one way (requests or answers lost), for one to three TTLs, then heal or cut the connections")
	fs.BoolVar(&cfg.PauseGateways, "pause-gateways", cfg.PauseGateways, "let the nemesis freeze a gateway (SIGSTOP) for two to three TTLs, in the middle of a transaction when it has one open")
	fs.BoolVar(&cfg.QuorumLoss, "quorum-loss", cfg.QuorumLoss, "let the nemesis kill two of the three etcd members for two to three TTLs")
	fs.BoolVar(&cfg.ClockFaults, "clock-faults", cfg.ClockFaults, "let the nemesis step workers' wall clocks forward and back, suspend workers in a critical section with their monotonic clock held back (a machine suspend), and step the clocks the gateways' max_hold and lease reaper read: the wall clock ahead and behind, the monotonic clock ahead")
	fs.BoolVar(&cfg.Throttle, "throttle", cfg.Throttle, "let the nemesis throttle a worker with a cgroup CPU limit (1 ms a second) for two to three TTLs; skipped, and reported so, where this process cannot make a cgroup")
	fs.IntVar(&cfg.Strict, "strict", cfg.Strict, "percentage of rounds on the strict resources, where a token writes once")
	fs.IntVar(&cfg.Wire, "wire", cfg.Wire, "percentage of the workers' rounds whose write goes through the gateways' SQL front (serve --pg-listen) as an application's transaction: SET LOCAL fencegw.tokens, its statements, COMMIT; with --unsafe-no-fence, the same statements without the fence")
	fs.IntVar(&cfg.Semaphores, "semaphores", cfg.Semaphores, "percentage of rounds on a permit of the semaphores (2 permits each): at most 2 writers at once per semaphore, each permit slot fenced")
	fs.IntVar(&cfg.WriteTransactions, "max-write-transactions", 0, "the gateways' --max-write-transactions (0: their default): fewer make more writes share transactions")
	fs.BoolVar(&cfg.Coalesce, "coalesce", false, "run the resources with coalesce: true (hot-key write coalescing)")
	fs.BoolVar(&cfg.GroupCommit, "group-commit", false, "run the resources with group_commit: true (with --coalesce): writes of several resources share transactions")
	fs.IntVar(&cfg.Transfers, "transfers", cfg.Transfers, "percentage of rounds that take two leases and move money between their resources with one write fenced on both")
	fs.IntVar(&cfg.LeaseChurn, "lease-churn", 0, "lease-churn workers to add: each loops over short leases (2-3 s) on --churn-resources resources churn/r0.., one write each, released, left to expire or paused past it; the checker holds each resource's grants and writes to strictly increasing tokens, and the nemesis is a late holder of their resources (late-churn-holder)")
	fs.IntVar(&cfg.ChurnResources, "churn-resources", cfg.ChurnResources, "with --lease-churn: the resources churn/r0.. its workers take leases on")
	fs.BoolVar(&cfg.Failover, "failover", false, "a primary with a synchronous streaming standby; the nemesis kills the primary and promotes the standby")
	fs.BoolVar(&cfg.AsyncStandby, "async-standby", false, "with --failover: an asynchronous standby whose WAL is held back, the control run that must lose acknowledged writes")
	fs.DurationVar(&cfg.FailoverEvery, "failover-every", cfg.FailoverEvery, "with --failover: time between failovers")
	fs.BoolVar(&cfg.BackendFaults, "backend-faults", cfg.BackendFaults, "let the nemesis cancel and terminate the gateways' PostgreSQL backends, set a short statement_timeout or idle_in_transaction_session_timeout on their role, and with --failover cancel COMMITs' waits for the synchronous standby and stop the standby before every other failover")
	fs.BoolVar(&cfg.UnsafeIgnoreCommitWarnings, "unsafe-ignore-commit-warnings", false, "control run, with --failover: gateways that answer 200 for a COMMIT PostgreSQL warned about; every failover follows a standby outage whose cancelled waits it loses, and the checker must find them")
	fs.BoolVar(&cfg.EtcdRollback, "etcd-rollback", false, "snapshot etcd, later restore every member from the snapshot (revisions issued again): gateways must halt, and the nemesis runs fencegw epoch bump")
	fs.BoolVar(&cfg.RollbackBump, "rollback-bump", false, "with --etcd-rollback: restore with --bump-revision and --mark-compacted, which should need no halt")
	fs.IntVar(&cfg.MinFailovers, "min-failovers", 0, fmt.Sprintf("with --failover: go on past --duration until this many failovers were done (at most %d × --duration)", torture.MaxOverrun))
	fs.IntVar(&cfg.MinRollbacks, "min-rollbacks", 0, fmt.Sprintf("with --etcd-rollback: go on past --duration until this many rollbacks were done (at most %d × --duration)", torture.MaxOverrun))
	fs.DurationVar(&cfg.RollbackEvery, "rollback-every", cfg.RollbackEvery, "with --etcd-rollback: a snapshot, then half this later a restore from it")
	fs.StringVar(&cfg.Dir, "dir", "", "run folder for histories, logs and report.json (default: a temp dir, removed)")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the temp run folder")
	fs.BoolVar(&asJSON, "json", false, "print the whole report as one JSON document")
	completeFiles(cmd, "dir")
	return cmd
}

// runTorture serves `fencegw torture`; the exit status says whether the
// verdict was the expected one.
func runTorture(ctx context.Context, cfg torture.Config, asJSON bool, out io.Writer) error {
	if err := cfg.Check(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	report, err := torture.Run(ctx, cfg, log)
	if err != nil {
		return err
	}
	if asJSON {
		// One JSON document and nothing else on stdout; the verdict is in it.
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(report)
	} else {
		printReport(out, report)
	}
	return judge(cfg, report)
}

// judge says whether report is the verdict cfg's run should have had: nil,
// or the exit error saying why not.
func judge(cfg torture.Config, report check.Report) error {
	control, short := cfg.UnsafeNoFence || cfg.AsyncStandby || cfg.UnsafeIgnoreCommitWarnings, checkFaultsDone(cfg, report.Faults, report.Skipped)
	switch {
	case cfg.UnsafeNoFence && report.OK():
		return &exitError{code: 1, err: errors.Join(errors.New("torture: control run with fencing off found no violation: the checker proved nothing"), short)}
	case cfg.AsyncStandby && report.OK():
		return &exitError{code: 1, err: errors.Join(errors.New("torture: control run with an asynchronous standby found no violation this time"), short)}
	case cfg.UnsafeIgnoreCommitWarnings && report.OK():
		return &exitError{code: 1, err: errors.Join(errors.New("torture: control run with commit warnings ignored found no violation this time"), short)}
	case !control && !report.OK():
		return &exitError{code: 1, err: fmt.Errorf("torture: %d violation(s) with fencing on", len(report.Violations))}
	case !control && short != nil:
		return &exitError{code: 1, err: short}
	}
	return nil
}

// checkFaultsDone says whether a run reached its bound (MaxOverrun ×
// --duration) short of the failovers or rollbacks it was asked for, of
// the late holder's write every run without an asynchronous standby has,
// or of a fault kind it asks for and did not skip. A fenced run's PASS
// then proves less than asked, and fails; a control run that found its
// violations proved its point with fewer faults.
func checkFaultsDone(cfg torture.Config, faults map[string]int, skipped map[string]string) error {
	missing := cfg.FaultsMissing(faults, skipped)
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("torture: the run reached its time bound (%v) short of the faults it asked for: %s; its verdict proves less than asked; give it a longer --duration",
		torture.MaxOverrun*cfg.Duration, strings.Join(missing, "; "))
}

// printReport writes the report as text: the verdict, then what the run
// did — faults by kind, those skipped and why, how writes shared
// transactions, what the workers' clients said of their leases, what the
// lease-churn workers did.
func printReport(w io.Writer, r check.Report) {
	fmt.Fprintln(w, r.Verdict)
	fmt.Fprintf(w, "faults: %s\n", counts(r.Faults))
	for _, k := range slices.Sorted(maps.Keys(r.Skipped)) {
		fmt.Fprintf(w, "skipped: %s: %s\n", k, r.Skipped[k])
	}
	if r.Batching != nil {
		fmt.Fprintf(w, "shared transactions: %s\n", r.Batching)
	}
	if r.Leases != nil {
		fmt.Fprintf(w, "leases as writes were sent: %s\n", counts(r.Leases))
	}
	if r.Retries != nil {
		fmt.Fprintf(w, "retries under a write's key: %s\n", counts(r.Retries))
	}
	if r.FenceReads != "" {
		fmt.Fprintf(w, "fences read: %s\n", r.FenceReads)
	}
	if r.Churn != nil {
		fmt.Fprintf(w, "lease churn: %s\n", counts(r.Churn))
	}
	for i, v := range r.Violations {
		if i == maxViolationsPrinted {
			fmt.Fprintf(w, "… and %d more (--json has them all)\n", len(r.Violations)-i)
			break
		}
		fmt.Fprintf(w, "%s: %s\n", v.Kind, v.Message)
	}
}

// maxViolationsPrinted bounds the text report; --json has every one.
const maxViolationsPrinted = 20

// counts is "a 1, b 2", by name.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

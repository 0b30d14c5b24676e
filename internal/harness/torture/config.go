package torture

import (
	"errors"
	"time"
)

// Config sizes one torture run. Every loop is bounded by Duration.
type Config struct {
	Workers   int
	Resources int
	Gateways  int
	Duration  time.Duration
	TTL       time.Duration // of the workers' leases
	Seed      int64
	// Faults: how often the nemesis acts, and what it may do.
	FaultEvery      time.Duration
	KillGateways    bool
	RestartPostgres bool
	EtcdFaults      bool // kill the leader, kill a follower, freeze a member
	SlowNetwork     bool // hold the gateways' PostgreSQL traffic for up to two TTLs
	// Partitions cuts one gateway off from etcd or from PostgreSQL, both
	// ways or one way, for one to three TTLs (faults.go).
	Partitions bool
	// PauseGateways freezes a gateway (SIGSTOP) for two to three TTLs, in
	// the middle of a transaction when it has one open.
	PauseGateways bool
	// QuorumLoss stops two of the three etcd members for two to three
	// TTLs.
	QuorumLoss bool
	// ClockFaults steps workers' wall clocks forward and back, and
	// suspends workers inside a critical section with their monotonic
	// clock held back (a machine suspend), in the workers' injected
	// clock (clockpage.go); and moves the clock the gateways' max_hold
	// and lease reaper read: the wall clock ahead and behind, the
	// monotonic clock ahead (nemesis_gatewayclock.go).
	ClockFaults bool
	// Throttle limits a worker's CPU with a cgroup for two to three TTLs,
	// where the machine lets this process make one; else the report says
	// why it was skipped.
	Throttle bool
	// Strict is the percentage of the workers' rounds on the strict
	// resources (a token writes once).
	Strict int
	// Semaphores is the percentage of the workers' rounds on a permit of
	// the semaphores sem/r0.. (semPermits each): the checker holds each
	// to at most semPermits writers at once, and each permit slot to no
	// stale write.
	Semaphores int
	// WriteTransactions is the gateways' --max-write-transactions (0:
	// their default): fewer transactions in flight make more writes
	// share them.
	WriteTransactions int
	// EtcdTLS runs the cluster with TLS and client certificate
	// authentication; the gateways and epoch bump connect with a client
	// certificate.
	EtcdTLS bool
	// UnsafeNoFence runs the gateways with fencing off: the control run,
	// whose checker must find violations.
	UnsafeNoFence bool
	// Coalesce runs the resources with coalesce: true.
	Coalesce bool
	// GroupCommit runs them with group_commit: true (needs Coalesce): the
	// writes of several resources that wait for a connection share one
	// transaction.
	GroupCommit bool
	// Failover runs PostgreSQL as a primary with a streaming standby
	// behind one multi-host URL, and the nemesis kills the primary and
	// promotes the standby every FailoverEvery (RestartPostgres and
	// SlowNetwork do not apply). The standby is synchronous unless
	// AsyncStandby: the control, whose failovers lose acknowledged
	// commits.
	Failover      bool
	AsyncStandby  bool
	FailoverEvery time.Duration
	// BackendFaults lets the nemesis do to the gateways' PostgreSQL
	// sessions what operators and databases do (nemesis_backend.go):
	// cancel or terminate a backend in a statement, set a short
	// statement_timeout or idle_in_transaction_session_timeout on their
	// role; with Failover, cancel a COMMIT's wait for the synchronous
	// standby, and stop the standby before every other failover, the
	// waits cancelled and terminated meanwhile.
	BackendFaults bool
	// UnsafeIgnoreCommitWarnings runs the gateways with
	// --unsafe-ignore-commit-warnings (needs Failover): a COMMIT
	// PostgreSQL warned about is answered 200. The control of the
	// standby outages, every failover after one, whose cancelled waits
	// the promotion loses.
	UnsafeIgnoreCommitWarnings bool
	// EtcdRollback takes a snapshot of etcd and, RollbackEvery/2 later,
	// restores every member from it (the cluster issues revisions again);
	// the gateways must halt, and the nemesis runs fencegw epoch bump.
	// With RollbackBump the restore bumps the revision and marks it
	// compacted: no halt expected.
	EtcdRollback  bool
	RollbackBump  bool
	RollbackEvery time.Duration
	// MinFailovers and MinRollbacks make the run go on past Duration until
	// the nemesis has done that many failovers and etcd rollbacks, at most
	// MaxOverrun times Duration: a run that must show them waits for them,
	// not for a window of time on a busy machine to hold enough.
	MinFailovers, MinRollbacks int
	// Burst: each lease sends 1 to Burst writes at once.
	Burst int
	// Wire is the percentage of the workers' rounds (on res and strict
	// resources) whose write goes through the gateways' SQL front, as an
	// application's own transaction, instead of the HTTP API (wire.go).
	Wire int
	// Transfers is the percentage of rounds that take two resources'
	// leases and move money between them with one write fenced on both.
	Transfers int
	// LeaseChurn adds that many lease-churn workers (churn.go): each
	// loops over short leases on ChurnResources resources churn/r0..,
	// one write with each lease's token, and lets each go (released,
	// left to expire, or paused past it before the write); the nemesis
	// pauses them as it does the other workers, and is a late holder of
	// their resources (late-churn-holder). The checker holds their
	// grants and writes to strictly increasing tokens per resource.
	LeaseChurn     int
	ChurnResources int
	Dir            string // run folder (histories, logs); "" = a temp dir, removed unless Keep
	Keep           bool
	Binary         string // the fencegw binary for child processes; "" = this one
}

// Defaults are the CI profile: half a minute on two cores, with a pause of
// a worker past its lease every second or so.
func Defaults() Config {
	return Config{
		Workers: 6, Resources: 4, Gateways: 2, Duration: 30 * time.Second, TTL: time.Second, Seed: 1,
		FaultEvery: 600 * time.Millisecond, KillGateways: true, RestartPostgres: true, EtcdFaults: true, SlowNetwork: true, Burst: 3,
		Partitions: true, PauseGateways: true, QuorumLoss: true, ClockFaults: true, Throttle: true, BackendFaults: true, Strict: 20,
		Transfers: 25, FailoverEvery: 6 * time.Second, RollbackEvery: 12 * time.Second, ChurnResources: 16,
	}
}

func (c Config) Check() error {
	switch {
	case c.Workers < 0 || c.Workers > 64, c.Resources < 1 || c.Resources > 64, c.Gateways < 1 || c.Gateways > 8:
		return errors.New("torture: want 0-64 workers, 1-64 resources, 1-8 gateways")
	case c.LeaseChurn < 0 || c.LeaseChurn > 64 || c.Workers+c.LeaseChurn < 1 || c.ChurnResources < 1 || c.ChurnResources > 64:
		return errors.New("torture: want 0-64 lease-churn workers on 1-64 churn resources, and at least one worker of either kind")
	case c.Duration < 5*time.Second || c.Duration > time.Hour:
		return errors.New("torture: duration must be 5s to 1h")
	case c.TTL < time.Second || c.TTL > 30*time.Second:
		return errors.New("torture: ttl must be 1s to 30s")
	case c.GroupCommit && !c.Coalesce:
		return errors.New("torture: group commit needs coalesce")
	case c.Burst < 1 || c.Burst > 32:
		return errors.New("torture: burst must be 1 to 32")
	case c.Transfers < 0 || c.Transfers > 100 || (c.Transfers > 0 && c.Resources < 2):
		return errors.New("torture: transfers is a percentage, 0 to 100, and needs at least 2 resources")
	case c.Wire < 0 || c.Wire > 100:
		return errors.New("torture: wire is a percentage, 0 to 100")
	case c.Strict < 0 || c.Strict > 100:
		return errors.New("torture: strict is a percentage, 0 to 100")
	case c.Semaphores < 0 || c.Strict+c.Semaphores > 100:
		return errors.New("torture: semaphores is a percentage, 0 to 100 less strict")
	case c.WriteTransactions < 0 || c.WriteTransactions > 64:
		return errors.New("torture: --max-write-transactions must be 0 (the gateways' default) to 64")
	case c.AsyncStandby && !c.Failover:
		return errors.New("torture: --async-standby needs --failover")
	case c.UnsafeIgnoreCommitWarnings && (!c.Failover || !c.BackendFaults || c.AsyncStandby):
		return errors.New("torture: --unsafe-ignore-commit-warnings needs --failover and --backend-faults, and no --async-standby")
	case c.Failover && c.FailoverEvery < 2*time.Second:
		return errors.New("torture: failovers at most every 2s")
	case c.MinFailovers < 0 || c.MinRollbacks < 0 || (c.MinFailovers > 0 && !c.Failover) || (c.MinRollbacks > 0 && !c.EtcdRollback):
		return errors.New("torture: --min-failovers needs --failover and --min-rollbacks --etcd-rollback, neither negative")
	case c.RollbackBump && !c.EtcdRollback:
		return errors.New("torture: --rollback-bump needs --etcd-rollback")
	case c.EtcdRollback && c.RollbackEvery < 4*time.Second:
		return errors.New("torture: rollbacks at most every 4s")
	case c.FaultEvery < 100*time.Millisecond:
		return errors.New("torture: faults at most every 100ms")
	}
	return nil
}

// lossControl reports whether c is a control whose failovers lose
// acknowledged commits, where the nemesis writes across each failover
// (twoholders.go) instead of acting as a late holder.
func (c Config) lossControl() bool { return c.AsyncStandby || c.UnsafeIgnoreCommitWarnings }

// workerProcs is how many worker processes a run has: the workers, then
// the lease-churn workers.
func (c Config) workerProcs() int { return c.Workers + c.LeaseChurn }

// workerPages reports whether the workers have clock pages: for the
// clock faults, and for the nemesis's requests that a lease-churn worker
// stop itself (clockpage.go).
func (c Config) workerPages() bool { return c.ClockFaults || c.LeaseChurn > 0 }

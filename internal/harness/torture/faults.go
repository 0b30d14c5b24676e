package torture

import (
	"fmt"
	"strings"
)

// faultKind is one kind of fault the nemesis injects: its name in the
// report's faults, how often a random roll picks it, and whether a run
// asks for it. Every kind a run asks for is injected at least once: the
// nemesis goes through them all, in a seeded order, before it rolls, and
// a run is not done (FaultsMissing) before each has happened. A kind
// happened only when its own name was counted: no other fault stands in
// for it (a follower killed is not the leader killed).
type faultKind struct {
	name    string
	weight  int
	enabled func(Config) bool
}

var faultKinds = []faultKind{
	{name: "pause-worker", weight: 30, enabled: func(c Config) bool { return c.workerProcs() > 0 }},
	{name: "late-churn-holder", weight: 6, enabled: func(c Config) bool { return c.LeaseChurn > 0 }},
	{name: "kill-gateway", weight: 9, enabled: func(c Config) bool { return c.KillGateways }},
	{name: "kill-etcd-leader", weight: 4, enabled: func(c Config) bool { return c.EtcdFaults }},
	{name: "kill-etcd-member", weight: 2, enabled: func(c Config) bool { return c.EtcdFaults }},
	{name: "pause-etcd-member", weight: 2, enabled: func(c Config) bool { return c.EtcdFaults }},
	{name: "etcd-quorum-loss", weight: 3, enabled: func(c Config) bool { return c.QuorumLoss }},
	{name: "slow-network", weight: 6, enabled: func(c Config) bool { return c.SlowNetwork }},
	{name: "partition-etcd", weight: 3, enabled: func(c Config) bool { return c.Partitions }},
	{name: "partition-etcd-one-way", weight: 3, enabled: func(c Config) bool { return c.Partitions }},
	{name: "partition-postgres", weight: 3, enabled: func(c Config) bool { return c.Partitions }},
	{name: "partition-postgres-one-way", weight: 3, enabled: func(c Config) bool { return c.Partitions }},
	{name: "pause-gateway", weight: 7, enabled: func(c Config) bool { return c.PauseGateways }},
	{name: "wall-clock-forward", weight: 3, enabled: func(c Config) bool { return c.ClockFaults }},
	{name: "wall-clock-back", weight: 3, enabled: func(c Config) bool { return c.ClockFaults }},
	{name: "suspend-worker", weight: 6, enabled: func(c Config) bool { return c.ClockFaults }},
	{name: "gateway-clock-forward", weight: 2, enabled: func(c Config) bool { return c.ClockFaults }},
	{name: "gateway-clock-back", weight: 2, enabled: func(c Config) bool { return c.ClockFaults && c.Gateways > 1 }},
	{name: "gateway-clock-fast", weight: 2, enabled: func(c Config) bool { return c.ClockFaults }},
	{name: "throttle-worker", weight: 4, enabled: func(c Config) bool { return c.Throttle }},
	{name: "restart-postgres", weight: 6, enabled: func(c Config) bool { return c.RestartPostgres }},
	{name: "cancel-backend", weight: 3, enabled: func(c Config) bool { return c.BackendFaults }},
	{name: "terminate-backend", weight: 3, enabled: func(c Config) bool { return c.BackendFaults }},
	{name: "cancel-commit", weight: 3, enabled: func(c Config) bool { return c.BackendFaults && c.Failover }},
	{name: "statement-timeout", weight: 2, enabled: func(c Config) bool { return c.BackendFaults }},
	{name: "idle-in-transaction-timeout", weight: 2, enabled: func(c Config) bool { return c.BackendFaults }},
}

// maxPostgresRestarts bounds restart-postgres: each takes a second or
// two of the run with no writes at all.
const maxPostgresRestarts = 2

// kinds are the fault kinds c asks for, less those skipped on this
// machine.
func (c Config) kinds(skipped map[string]string) []faultKind {
	var ks []faultKind
	for _, k := range faultKinds {
		if _, skip := skipped[k.name]; k.enabled(c) && !skip {
			ks = append(ks, k)
		}
	}
	return ks
}

// happened reports whether faults counted k.
func (k faultKind) happened(faults map[string]int) bool { return faults[k.name] > 0 }

// FaultsMissing lists the faults c asks for that faults (the nemesis's
// counts) does not show, e.g. "only 1 of the 3 failovers", or "fault
// kinds that never happened: partition-etcd, suspend-worker": the
// minimum failovers and rollbacks, the late holder's write, and one of
// each fault kind the run asks for, less those skipped on this machine
// (skipped, as in the report: a skip is not a miss). None
// once the run has done them. The nemesis waits on it, and the command
// judges a run that ended at its bound by it.
func (c Config) FaultsMissing(faults map[string]int, skipped map[string]string) []string {
	var missing []string
	if got := faults["failover"]; got < c.MinFailovers {
		missing = append(missing, fmt.Sprintf("only %d of the %d failovers", got, c.MinFailovers))
	}
	if got := faults["etcd-rollback"]; got < c.MinRollbacks {
		missing = append(missing, fmt.Sprintf("only %d of the %d etcd rollbacks", got, c.MinRollbacks))
	}
	if faults["standby-outage"] < 1 && c.Failover && c.BackendFaults {
		missing = append(missing, "no standby outage followed by a failover")
	}
	if faults["late-holder"] < 1 && !c.lossControl() {
		missing = append(missing, "no late holder's write answered")
	}
	if faults["late-permit-holder"] < 1 && c.Semaphores > 0 && !c.lossControl() {
		missing = append(missing, "no late permit holder's write answered")
	}
	var none []string
	for _, k := range c.kinds(skipped) {
		if !k.happened(faults) {
			none = append(none, k.name)
		}
	}
	if len(none) > 0 {
		missing = append(missing, "fault kinds that never happened: "+strings.Join(none, ", "))
	}
	return missing
}

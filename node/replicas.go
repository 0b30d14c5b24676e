package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegw/fencegw/fence"
)

// replicas is what this replica last learnt of the others sharing its
// database: those that run another policy. Replicas that disagree on a
// resource's fence settings disagree on writes (one refuses an expired
// token another accepts); during a rolling policy change they must, for a
// while, so a disagreement is reported, not a reason to stop serving.
type replicas struct {
	self      fence.Replica
	disagree  atomic.Pointer[[]fence.Replica] // nil until the first check
	checkedAt atomic.Int64                    // unix ns of the last check that succeeded
	every     atomic.Int64                    // the checks' interval, in ns
	lastNames string                          // to log changes only; CheckReplicas' alone
	others    prometheus.Collector            // fencegw_replicas_with_another_policy
}

func newReplicas(policyDigest, fenceSettings string) *replicas {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	name := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	rs := &replicas{self: fence.Replica{Name: name, Policy: policyDigest, Fences: fenceSettings}}
	rs.others = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fencegw_replicas_with_another_policy",
		Help: "Replicas sharing this database, recently seen, that run another policy file, up to 10 (see /readyz and the log).",
	}, func() float64 {
		if others := rs.disagree.Load(); others != nil {
			return float64(len(*others))
		}
		return 0
	})
	return rs
}

// Name is this replica's, as the others see it in fencegw.replicas: the
// leases the gateway grants name it as the replica that measures their
// hold times.
func (n *Node) Name() string { return n.replicas.self.Name }

// replicasRecent is how long a replica that stopped announcing itself
// still counts, for a check interval of every.
func replicasRecent(every time.Duration) time.Duration { return max(5*every, 10*time.Second) }

// CheckReplicas announces this replica's policy in PostgreSQL and learns
// which recently seen replicas run another; /readyz and the log say so.
func (n *Node) CheckReplicas(ctx context.Context, every time.Duration) error {
	rs := n.replicas
	rs.every.Store(int64(every))
	others, err := fence.Announce(ctx, n.cfg.Pool, rs.self, replicasRecent(every))
	if err != nil {
		return err
	}
	rs.disagree.Store(&others)
	rs.checkedAt.Store(time.Now().UnixNano())
	names := make([]string, len(others))
	fences := false
	for i, o := range others {
		names[i] = o.Name
		fences = fences || o.Fences != rs.self.Fences
	}
	joined := strings.Join(names, ", ")
	switch {
	case joined == rs.lastNames:
	case len(others) == 0:
		n.log.Info("every replica runs this policy again", "policy", rs.self.Policy)
	case fences:
		n.log.Error("replicas run other fence settings: they can disagree on whether a token passes",
			"replicas", joined, "policy", rs.self.Policy, "differences", fenceDifferences(rs.self, others))
	default:
		n.log.Warn("replicas run another policy file (same fence settings)", "replicas", joined, "policy", rs.self.Policy)
	}
	rs.lastNames = joined
	return nil
}

// RunReplicaCheck calls CheckReplicas every interval until ctx ends, then
// withdraws this replica's entry.
func (n *Node) RunReplicaCheck(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, every)
		if err := n.CheckReplicas(cctx, every); err != nil && ctx.Err() == nil {
			n.log.Warn("announcing this replica failed", "error", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_ = fence.Withdraw(wctx, n.cfg.Pool, n.replicas.self.Name)
			cancel()
			return
		case <-t.C:
		}
	}
}

// PolicyCheck is /readyz's word on the other replicas' policies, as the
// last CheckReplicas learnt them.
func (n *Node) PolicyCheck() string {
	rs := n.replicas
	others := rs.disagree.Load()
	since := time.Since(time.Unix(0, rs.checkedAt.Load()))
	switch {
	case others == nil:
		return "not checked yet"
	case since > replicasRecent(time.Duration(rs.every.Load())):
		return fmt.Sprintf("unknown: not checked for %s (see the log)", since.Round(time.Second))
	case len(*others) == 0:
		return "ok"
	}
	what := "another policy file"
	if slices.ContainsFunc(*others, func(o fence.Replica) bool { return o.Fences != rs.self.Fences }) {
		what = "other fence settings"
	}
	// Names (host, pid) stay in the log: /readyz answers anyone.
	return fmt.Sprintf("%d replica(s) run %s (names and differences in the log)", len(*others), what)
}

// fenceDifferences lists, for the log, the fence settings lines that are
// not the same everywhere.
func fenceDifferences(self fence.Replica, others []fence.Replica) string {
	mine := strings.Split(self.Fences, "\n")
	var diffs []string
	for _, o := range others {
		for _, line := range strings.Split(o.Fences, "\n") {
			if !slices.Contains(mine, line) && !slices.Contains(diffs, "there: "+line) {
				diffs = append(diffs, "there: "+line)
			}
		}
		theirs := strings.Split(o.Fences, "\n")
		for _, line := range mine {
			if !slices.Contains(theirs, line) && !slices.Contains(diffs, "here: "+line) {
				diffs = append(diffs, "here: "+line)
			}
		}
	}
	return strings.Join(diffs, "; ")
}

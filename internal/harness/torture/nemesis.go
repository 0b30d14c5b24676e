package torture

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencegw/fencegw/internal/harness/cgroupcpu"
	"github.com/fencegw/fencegw/internal/harness/torture/check"
)

// nemesis injects faults on a schedule until its context ends. Pausing a
// worker past its TTL is the fault fencing exists for, so it is the most
// frequent; the others test that nothing acknowledged is lost and nothing
// half-done is acknowledged whatever breaks: gateways, etcd, PostgreSQL,
// the network between them, and the workers' clocks and CPU.
type nemesis struct {
	cfg      Config
	rnd      *rand.Rand
	log      *slog.Logger
	workers  []*exec.Cmd
	gateways []*gatewayProc
	pg       *postgres
	// replicated, with --failover: the primary and standby it fails over.
	replicated *replicated
	// For --etcd-rollback: the binary (for epoch bump), the run folder
	// (for snapshots), the database URL, and how long gateways took to
	// halt after each restore.
	bin, dir, dbURL string
	haltAfter       []time.Duration
	etcd            []*etcdMember
	etcdBusy        atomic.Bool // one etcd fault at a time: the cluster regains its quorum between them
	// links are each gateway's proxies to PostgreSQL and etcd (links.go).
	links         []*links
	slowBusy      atomic.Bool
	partitionBusy atomic.Bool
	// clocks are the workers' clock pages (clockpage.go); clockBusy, one
	// wall-clock step at a time per worker.
	clocks    []*clockPage
	clockBusy []atomic.Bool
	// gatewayClocks are the gateways' clock pages, whose steps their
	// authorities' hold records read (nemesis_gatewayclock.go); one
	// such fault at a time.
	gatewayClocks    []*clockPage
	gatewayClockBusy atomic.Bool
	// cpu is the cgroup a throttled worker is moved into; nil where the
	// machine allows none (skipped says why).
	cpu          *cgroupcpu.Group
	throttleBusy atomic.Bool
	// backendBusy, roleBusy: one backend signalled, one timeout on the
	// gateways' role at a time (nemesis_backend.go).
	backendBusy, roleBusy atomic.Bool
	skipped               map[string]string
	pgRestarts            int
	// late, unless the run has an asynchronous standby, acts out the
	// book's late holder on the nemesis's own resource (twoholders.go).
	late *twoHolders
	// latePermit, with semaphores, is a late holder of a permit slot of
	// sem/nemesis.
	latePermit *twoHolders
	// churnHolder, with lease-churn workers, takes the lease after one
	// the nemesis stopped (nemesis_churn.go), one at a time (churnBusy).
	churnHolder *twoHolders
	churnBusy   atomic.Bool

	mu     sync.Mutex
	faults map[string]int
	paused map[int]bool // workers frozen or suspended by the nemesis
	// fences are the fences read after each failover (fences.go).
	fences []check.FenceReading
	wg     sync.WaitGroup
}

// maxTries bounds how often the nemesis tries a kind it has not injected
// yet and finds busy (an etcd fault while a rollback runs, say) before it
// leaves it to the random rolls.
const maxTries = 20

func (n *nemesis) run(ctx context.Context) {
	t := time.NewTicker(n.cfg.FaultEvery)
	defer t.Stop()
	if n.replicated != nil {
		n.wg.Go(func() { n.failovers(ctx) })
	}
	if n.cfg.EtcdRollback {
		n.wg.Go(func() { n.rollbacks(ctx) })
	}
	if n.late != nil {
		n.wg.Go(func() { n.lateHolders(ctx) })
	}
	kinds := n.cfg.kinds(n.skipped)
	pending := make([]string, len(kinds))
	for i, k := range kinds {
		pending[i] = k.name
	}
	n.rnd.Shuffle(len(pending), func(i, j int) { pending[i], pending[j] = pending[j], pending[i] })
	tries := map[string]int{}
	for tick := 0; ; tick++ {
		select {
		case <-ctx.Done():
			n.wg.Wait() // every paused worker resumed, the last failover done
			return
		case <-t.C:
		}
		var name string
		switch missing := n.missingKinds(kinds); {
		case len(pending) > 0:
			name, pending = pending[0], pending[1:]
		case len(missing) > 0 && tick%2 == 0:
			// Injected but not yet counted (a clock fault counts once it
			// reached a write): again, rather than at the odds of a roll,
			// each in turn, so that one that keeps missing does not keep
			// the others from their tries.
			name = missing[(tick/2)%len(missing)]
		default:
			name = n.roll(kinds)
		}
		if n.inject(ctx, name) {
			continue
		}
		if tries[name]++; tries[name] < maxTries && !kindHappened(kinds, name, n.counts()) {
			pending = append(pending, name)
		}
		n.pauseWorker(ctx) // the most frequent fault stands in
	}
}

// roll picks a kind at random by weight.
func (n *nemesis) roll(kinds []faultKind) string {
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	r := n.rnd.IntN(total)
	for _, k := range kinds {
		if r -= k.weight; r < 0 {
			return k.name
		}
	}
	return "pause-worker"
}

// missingKinds names the kinds the run asks for that have not happened
// yet.
func (n *nemesis) missingKinds(kinds []faultKind) []string {
	faults := n.counts()
	var missing []string
	for _, k := range kinds {
		if !k.happened(faults) {
			missing = append(missing, k.name)
		}
	}
	return missing
}

func kindHappened(kinds []faultKind, name string, faults map[string]int) bool {
	for _, k := range kinds {
		if k.name == name {
			return k.happened(faults)
		}
	}
	return false
}

// inject starts one fault of the kind named; false if it could not now
// (busy, or nothing to inject it on).
func (n *nemesis) inject(ctx context.Context, name string) bool {
	switch name {
	case "pause-worker":
		return n.pauseWorker(ctx)
	case "kill-gateway":
		return n.crashGateway(ctx)
	case "kill-etcd-leader", "kill-etcd-member", "pause-etcd-member":
		return n.etcdFault(ctx, name)
	case "etcd-quorum-loss":
		return n.quorumLoss(ctx)
	case "slow-network":
		return n.slowNetwork(ctx)
	case "partition-etcd", "partition-postgres":
		return n.partition(ctx, name[len("partition-"):], false)
	case "partition-etcd-one-way", "partition-postgres-one-way":
		return n.partition(ctx, name[len("partition-"):len(name)-len("-one-way")], true)
	case "pause-gateway":
		return n.pauseGateway(ctx)
	case "wall-clock-forward", "wall-clock-back":
		return n.stepWallClock(ctx, name == "wall-clock-forward")
	case "gateway-clock-forward", "gateway-clock-back", "gateway-clock-fast":
		return n.stepGatewayClocks(ctx, name)
	case "suspend-worker":
		return n.suspendWorker(ctx)
	case "throttle-worker":
		return n.throttleWorker(ctx)
	case "restart-postgres":
		return n.restartPostgres(ctx)
	case "cancel-backend", "terminate-backend", "cancel-commit":
		return n.signalBackend(ctx, name)
	case "statement-timeout", "idle-in-transaction-timeout":
		return n.roleTimeout(ctx, name)
	case "late-churn-holder":
		return n.lateChurnHolder(ctx)
	}
	return false
}

// awaitEnough returns once until has passed and the nemesis has done the
// faults the run asks for (FaultsMissing), or when ctx ends.
func (n *nemesis) awaitEnough(ctx context.Context, until time.Time) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		enough := len(n.cfg.FaultsMissing(n.counts(), n.skipped)) == 0
		if enough && !time.Now().Before(until) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// lateHolders has a holder write after its successor, at once and then
// every lateHolderEvery faults' time, until ctx ends. A worker's late
// write needs a random pause to land between its lease and its write;
// this one is certain, so the control run's checker always has a stale
// write to find, and the fenced runs a late write to refuse.
func (n *nemesis) lateHolders(ctx context.Context) {
	for {
		if n.late.lateWrite(ctx) {
			n.count("late-holder")
		}
		if n.latePermit != nil && n.latePermit.latePermitWrite(ctx) {
			n.count("late-permit-holder")
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(lateHolderEvery * n.cfg.FaultEvery):
		}
	}
}

// lateHolderEvery spaces the late holder's rounds, in faults: a few per
// run, each a lease grant and two writes beside the workers'.
const lateHolderEvery = 8

func (n *nemesis) count(fault string) { n.add(fault, 1) }

func (n *nemesis) add(fault string, k int) {
	n.mu.Lock()
	n.faults[fault] += k
	n.mu.Unlock()
}

// counts is a copy of the faults counted so far.
func (n *nemesis) counts() map[string]int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := make(map[string]int, len(n.faults))
	for k, v := range n.faults {
		c[k] = v
	}
	return c
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// ttls is between lo and hi TTLs, at random.
func (n *nemesis) ttls(lo, hi float64) time.Duration {
	return time.Duration(float64(n.cfg.TTL) * (lo + (hi-lo)*n.rnd.Float64()))
}

package torture

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// nemesis injects faults on a schedule until its context ends. Pausing a
// worker past its TTL is the fault fencing exists for, so it is the most
// frequent; gateway crashes and PostgreSQL restarts test that nothing
// acknowledged is lost and nothing half-done is acknowledged.
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
	etcdBusy        atomic.Bool // one etcd fault at a time: the cluster keeps its quorum
	proxy           *slowProxy  // between the gateways and PostgreSQL
	slowBusy        atomic.Bool
	// late, unless the run has an asynchronous standby, acts out the
	// book's late holder on the nemesis's own resource (twoholders.go).
	late *twoHolders

	mu     sync.Mutex
	faults map[string]int
	paused map[int]bool
	wg     sync.WaitGroup
}

func (n *nemesis) run(ctx context.Context) {
	t := time.NewTicker(n.cfg.FaultEvery)
	defer t.Stop()
	pgRestarts := 0
	if n.replicated != nil {
		n.wg.Add(1)
		go func() { defer n.wg.Done(); n.failovers(ctx) }()
	}
	if n.cfg.EtcdRollback {
		n.wg.Add(1)
		go func() { defer n.wg.Done(); n.rollbacks(ctx) }()
	}
	if n.late != nil {
		n.wg.Add(1)
		go func() { defer n.wg.Done(); n.lateHolders(ctx) }()
	}
	for {
		select {
		case <-ctx.Done():
			n.wg.Wait() // every paused worker resumed, the last failover done
			return
		case <-t.C:
		}
		switch roll := n.rnd.IntN(100); {
		case roll < 55:
			n.pauseWorker(ctx)
		case roll < 72 && n.cfg.KillGateways:
			n.crashGateway(ctx)
		case roll < 84 && n.cfg.EtcdFaults:
			n.etcdFault(ctx)
		case roll < 94 && n.cfg.SlowNetwork && n.proxy != nil:
			n.slowNetwork(ctx)
		case n.cfg.RestartPostgres && n.pg != nil && pgRestarts < 2:
			pgRestarts++
			n.restartPostgres(ctx)
		default:
			n.pauseWorker(ctx)
		}
	}
}

// awaitEnough returns once until has passed and the nemesis has done the
// failovers and rollbacks the run asks for, or when ctx ends.
func (n *nemesis) awaitEnough(ctx context.Context, until time.Time) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		n.mu.Lock()
		enough := len(n.cfg.FaultsMissing(n.faults)) == 0
		n.mu.Unlock()
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

func (n *nemesis) count(fault string) {
	n.mu.Lock()
	n.faults[fault]++
	n.mu.Unlock()
}

// pauseWorker freezes a worker (and its lease keepalives) for two to three
// TTLs: long enough for its lease to expire and a successor to write.
func (n *nemesis) pauseWorker(ctx context.Context) {
	i := n.rnd.IntN(len(n.workers))
	n.mu.Lock()
	if n.paused[i] {
		n.mu.Unlock()
		return
	}
	n.paused[i] = true
	n.mu.Unlock()
	p := n.workers[i].Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		n.mu.Lock()
		delete(n.paused, i)
		n.mu.Unlock()
		return
	}
	n.count("pause-worker")
	pause := time.Duration(float64(n.cfg.TTL) * (2 + n.rnd.Float64()))
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		select {
		case <-time.After(pause):
		case <-ctx.Done():
		}
		_ = p.Signal(syscall.SIGCONT)
		n.mu.Lock()
		delete(n.paused, i)
		n.mu.Unlock()
	}()
}

// crashGateway SIGKILLs a gateway mid-traffic and starts it again.
func (n *nemesis) crashGateway(ctx context.Context) {
	g := n.gateways[n.rnd.IntN(len(n.gateways))]
	g.kill()
	n.count("kill-gateway")
	time.Sleep(200 * time.Millisecond)
	if err := g.start(ctx); err != nil && ctx.Err() == nil {
		n.log.Error("restarting a gateway failed", "error", err)
	}
}

// failovers kills the primary and promotes its standby every
// FailoverEvery until ctx ends, the first after half an interval. A
// failover that has begun finishes (with a standby following the new
// primary) even if ctx ends meanwhile, so the checker finds a primary.
func (n *nemesis) failovers(ctx context.Context) {
	next := time.After(n.cfg.FailoverEvery / 2)
	for {
		select {
		case <-ctx.Done():
			return
		case <-next:
		}
		start := time.Now()
		if err := n.replicated.failover(context.WithoutCancel(ctx)); err != nil {
			n.log.Error("failover failed", "error", err)
			return
		}
		n.count("failover")
		n.log.Info("torture: failover done", "took", time.Since(start).Round(time.Millisecond).String())
		next = time.After(n.cfg.FailoverEvery)
	}
}

// restartPostgres stops and starts PostgreSQL under the gateways' feet.
func (n *nemesis) restartPostgres(ctx context.Context) {
	n.count("restart-postgres")
	if err := n.pg.restart(context.WithoutCancel(ctx)); err != nil {
		n.log.Error("restarting PostgreSQL failed", "error", err)
	}
}

// etcdFault kills the leader, kills a follower or freezes a member, and
// brings it back: the cluster keeps quorum, the gateways must ride through
// the election.
func (n *nemesis) etcdFault(ctx context.Context) {
	if !n.etcdBusy.CompareAndSwap(false, true) {
		n.pauseWorker(ctx)
		return
	}
	what, i := n.rnd.IntN(4), n.rnd.IntN(len(n.etcd))
	pause := time.Duration(1500+n.rnd.IntN(1000)) * time.Millisecond
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer n.etcdBusy.Store(false)
		kind := "kill-etcd-member"
		switch {
		case what < 2:
			if l, err := leader(ctx, n.etcd, 2*time.Second); err == nil {
				i, kind = l, "kill-etcd-leader"
			}
		case what == 3:
			p := n.etcd[i].cmd.Process
			if p.Signal(syscall.SIGSTOP) == nil {
				n.count("pause-etcd-member")
				select {
				case <-time.After(pause):
				case <-ctx.Done():
				}
				_ = p.Signal(syscall.SIGCONT)
			}
			return
		}
		n.etcd[i].kill()
		n.count(kind)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		if err := n.etcd[i].start(); err != nil {
			n.log.Error("restarting an etcd member failed", "member", n.etcd[i].name, "error", err)
		}
	}()
}

// slowNetwork holds the traffic between the gateways and PostgreSQL for a
// while: every chunk waits a quarter TTL to two TTLs, for one to three
// seconds. Writes sent in time then arrive after their lease expired.
func (n *nemesis) slowNetwork(ctx context.Context) {
	if !n.slowBusy.CompareAndSwap(false, true) {
		n.pauseWorker(ctx)
		return
	}
	n.count("slow-network")
	delay := time.Duration(float64(n.cfg.TTL) * (0.25 + 1.75*n.rnd.Float64()))
	span := time.Duration(1000+n.rnd.IntN(2000)) * time.Millisecond
	n.proxy.setDelay(delay)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer n.slowBusy.Store(false)
		select {
		case <-time.After(span):
		case <-ctx.Done():
		}
		n.proxy.setDelay(0)
	}()
}

package torture

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"sync"
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

	mu     sync.Mutex
	faults map[string]int
	paused map[int]bool
	wg     sync.WaitGroup
}

func (n *nemesis) run(ctx context.Context) {
	t := time.NewTicker(n.cfg.FaultEvery)
	defer t.Stop()
	pgRestarts := 0
	for {
		select {
		case <-ctx.Done():
			n.wg.Wait() // every paused worker resumed
			return
		case <-t.C:
		}
		switch roll := n.rnd.IntN(100); {
		case roll < 70:
			n.pauseWorker(ctx)
		case roll < 92 && n.cfg.KillGateways:
			n.crashGateway(ctx)
		case n.cfg.RestartPostgres && pgRestarts < 2:
			pgRestarts++
			n.restartPostgres(ctx)
		default:
			n.pauseWorker(ctx)
		}
	}
}

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

// restartPostgres stops and starts PostgreSQL under the gateways' feet.
func (n *nemesis) restartPostgres(ctx context.Context) {
	n.count("restart-postgres")
	if err := n.pg.restart(context.WithoutCancel(ctx)); err != nil {
		n.log.Error("restarting PostgreSQL failed", "error", err)
	}
}

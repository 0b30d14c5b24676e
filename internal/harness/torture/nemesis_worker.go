package torture

import (
	"context"
	"syscall"

	"github.com/fencegw/fencegw/internal/harness/pause"
)

// pauseWorker freezes a worker (and its lease keepalives) for two to three
// TTLs: long enough for its lease to expire and a successor to write.
func (n *nemesis) pauseWorker(ctx context.Context) bool {
	i := n.rnd.IntN(len(n.workers))
	if !n.hold(i) {
		return false
	}
	p := n.workers[i].Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		n.unhold(i)
		return false
	}
	n.count("pause-worker")
	d := n.ttls(2, 3)
	n.wg.Go(func() {
		sleep(ctx, d)
		_ = p.Signal(syscall.SIGCONT)
		n.unhold(i)
	})
	return true
}

// hold marks worker i as the nemesis's to stop and resume; false if it is
// already.
func (n *nemesis) hold(i int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.paused[i] {
		return false
	}
	n.paused[i] = true
	return true
}

func (n *nemesis) unhold(i int) {
	n.mu.Lock()
	delete(n.paused, i)
	n.mu.Unlock()
}

// throttleWorker moves a worker into the run's CPU-limited cgroup for two
// to three TTLs: at its limit the scheduler stalls it for the rest of a
// one-second period, as a container at its CPU quota is, which outlasts a
// short lease. The periods it was stalled are counted too.
func (n *nemesis) throttleWorker(ctx context.Context) bool {
	if n.cpu == nil || !n.throttleBusy.CompareAndSwap(false, true) {
		return false
	}
	pid := n.workers[n.rnd.IntN(len(n.workers))].Process.Pid
	before, _ := n.cpu.Throttled()
	if err := n.cpu.Add(pid); err != nil {
		n.log.Error("throttling a worker failed", "error", err)
		n.throttleBusy.Store(false)
		return false
	}
	n.count("throttle-worker")
	d := n.ttls(2, 3)
	n.wg.Go(func() {
		defer n.throttleBusy.Store(false)
		sleep(ctx, d)
		if err := n.cpu.Remove(pid); err != nil && !pause.Ended(pid) {
			n.log.Error("unthrottling a worker failed", "error", err)
		}
		if after, err := n.cpu.Throttled(); err == nil {
			n.add("throttled-periods", int(after-before))
		}
	})
	return true
}

package torture

import (
	"context"
	"syscall"
	"time"
)

// etcdFault is one member fault of the kind named, and the member
// brought back: kill-etcd-leader kills the leader, kill-etcd-member a
// follower, pause-etcd-member freezes any member. The cluster keeps
// quorum, the gateways must ride through the election. Each counts only
// under its own name, and only once done: a leader the nemesis could not
// find is not killed, and a follower is not counted as the leader.
func (n *nemesis) etcdFault(ctx context.Context, kind string) bool {
	if !n.etcdBusy.CompareAndSwap(false, true) {
		return false
	}
	i := n.rnd.IntN(len(n.etcd))
	pause := time.Duration(1500+n.rnd.IntN(1000)) * time.Millisecond
	n.wg.Go(func() {
		defer n.etcdBusy.Store(false)
		if kind == "pause-etcd-member" {
			p := n.etcd[i].cmd.Process
			if p.Signal(syscall.SIGSTOP) == nil {
				n.count(kind)
				sleep(ctx, pause)
				_ = p.Signal(syscall.SIGCONT)
			}
			return
		}
		l, err := leader(ctx, n.etcd, 2*time.Second)
		switch {
		case kind == "kill-etcd-leader" && err != nil:
			n.log.Info("no etcd leader to kill", "error", err)
			return
		case kind == "kill-etcd-leader":
			i = l
		case err == nil && i == l:
			i = (l + 1 + n.rnd.IntN(len(n.etcd)-1)) % len(n.etcd) // a follower
		}
		n.etcd[i].kill()
		n.count(kind)
		sleep(ctx, time.Second)
		if err := n.etcd[i].start(); err != nil {
			n.log.Error("restarting an etcd member failed", "member", n.etcd[i].name, "error", err)
		}
	})
	return true
}

// quorumLoss kills two of the three members, leaving one that can elect
// no leader, for two to three TTLs, then starts them again and waits for
// a leader: no lease can be granted, renewed or revoked meanwhile, and
// the leases' TTLs stand still until a leader is elected (etcd then
// renews them all). The gateways must refuse lease calls and go on
// taking writes with the tokens they already signed, which only the
// fence judges.
func (n *nemesis) quorumLoss(ctx context.Context) bool {
	if !n.etcdBusy.CompareAndSwap(false, true) {
		return false
	}
	spared := n.rnd.IntN(len(n.etcd))
	d := n.ttls(2, 3)
	n.wg.Go(func() {
		defer n.etcdBusy.Store(false)
		var down []*etcdMember
		for i, m := range n.etcd {
			if i != spared {
				m.kill()
				down = append(down, m)
			}
		}
		n.count("etcd-quorum-loss")
		sleep(ctx, d)
		for _, m := range down {
			if err := m.start(); err != nil {
				n.log.Error("restarting an etcd member failed", "member", m.name, "error", err)
			}
		}
		if _, err := leader(context.WithoutCancel(ctx), n.etcd, 30*time.Second); err != nil {
			n.log.Error("etcd elected no leader after the quorum loss", "error", err)
		}
	})
	return true
}

// failovers kills the primary and promotes its standby every
// FailoverEvery until ctx ends, the first after half an interval. With
// BackendFaults every other failover (every one in the control that
// ignores commit warnings) follows a standby outage (standbyOutage). A
// failover that has begun finishes (with a standby following the new
// primary) even if ctx ends meanwhile, so the checker finds a primary.
func (n *nemesis) failovers(ctx context.Context) {
	next := time.After(n.cfg.FailoverEvery / 2)
	for k := 0; ; k++ {
		select {
		case <-ctx.Done():
			return
		case <-next:
		}
		start := time.Now()
		var err error
		if n.cfg.BackendFaults && (n.cfg.UnsafeIgnoreCommitWarnings || k%2 == 1) {
			err = n.replicated.outageFailover(context.WithoutCancel(ctx), n.standbyOutage)
		} else {
			err = n.replicated.failover(context.WithoutCancel(ctx))
		}
		if err != nil {
			n.log.Error("failover failed", "error", err)
			return
		}
		n.count("failover")
		n.log.Info("torture: failover done", "took", time.Since(start).Round(time.Millisecond).String())
		next = time.After(n.cfg.FailoverEvery)
	}
}

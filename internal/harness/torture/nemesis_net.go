package torture

import (
	"context"
	"time"
)

// slowNetwork holds the traffic between the gateways and PostgreSQL for a
// while: every chunk waits a quarter TTL to two TTLs, for one to three
// seconds. Writes sent in time then arrive after their lease expired.
func (n *nemesis) slowNetwork(ctx context.Context) bool {
	if !n.slowBusy.CompareAndSwap(false, true) {
		return false
	}
	n.count("slow-network")
	delay := n.ttls(0.25, 2)
	span := time.Duration(1000+n.rnd.IntN(2000)) * time.Millisecond
	n.setPostgresDelay(delay)
	n.wg.Go(func() {
		defer n.slowBusy.Store(false)
		sleep(ctx, span)
		n.setPostgresDelay(0)
	})
	return true
}

func (n *nemesis) setPostgresDelay(d time.Duration) {
	for _, l := range n.links {
		for _, p := range l.pg {
			p.setDelay(d)
		}
	}
}

// partition cuts one gateway off from target ("etcd": every member;
// "postgres": every server) for one to three TTLs: both ways, or one way
// only — its requests lost, or the answers (etcd or PostgreSQL acts on
// what the gateway sent, and the gateway never hears). Then the
// partition heals (what was held arrives, as TCP's retransmissions bring
// it) or the connections are cut, as when TCP gives up.
func (n *nemesis) partition(ctx context.Context, target string, oneWay bool) bool {
	if !n.partitionBusy.CompareAndSwap(false, true) {
		return false
	}
	l := n.links[n.rnd.IntN(len(n.links))]
	dirs, name := []int{toServer, toClient}, "partition-"+target
	if oneWay {
		dirs, name = []int{n.rnd.IntN(2)}, name+"-one-way"
	}
	span, cut := n.ttls(1, 3), n.rnd.IntN(2) == 0
	for _, p := range l.to(target) {
		p.holdDirections(dirs...)
	}
	n.count(name)
	n.wg.Go(func() {
		defer n.partitionBusy.Store(false)
		sleep(ctx, span)
		for _, p := range l.to(target) {
			if cut {
				p.drop()
			} else {
				p.release()
			}
		}
	})
	return true
}

// restartPostgres stops and starts PostgreSQL under the gateways' feet:
// the one server, or with --failover the primary, in place (its
// synchronous standby reconnects; commits wait for it meanwhile). At most
// maxPostgresRestarts a run.
func (n *nemesis) restartPostgres(ctx context.Context) bool {
	if n.pgRestarts >= maxPostgresRestarts {
		return false
	}
	var err error
	switch {
	case n.pg != nil:
		err = n.pg.restart(context.WithoutCancel(ctx))
	case n.replicated != nil:
		var done bool
		if done, err = n.replicated.restartPrimary(context.WithoutCancel(ctx)); !done {
			return false // a failover is under way
		}
	default:
		return false
	}
	n.pgRestarts++
	n.count("restart-postgres")
	if err != nil {
		n.log.Error("restarting PostgreSQL failed", "error", err)
	}
	return true
}

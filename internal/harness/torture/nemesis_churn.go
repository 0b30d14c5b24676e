package torture

import (
	"context"
	"fmt"
	"time"
)

// lateChurnHolder stops a lease-churn worker at the end of its critical
// section, holding its lease on churn/r{k} and about to write with it;
// takes the next lease on churn/r{k} — granted once the stopped holder's
// lease expired — and writes with it; then resumes the worker, whose
// write with the older token follows its successor's: refused as stale
// with fencing, in the control a stale write on churn/r{k} every time,
// not when a pause happens to land between a lease and its write.
// Counted once the successor's write was acknowledged.
func (n *nemesis) lateChurnHolder(ctx context.Context) bool {
	if n.churnHolder == nil || !n.churnBusy.CompareAndSwap(false, true) {
		return false
	}
	i := n.cfg.Workers + n.rnd.IntN(n.cfg.LeaseChurn)
	succeeded := false
	// The worker comes to its critical section within a write's retries,
	// a pause past a lease and a wait for the next.
	reach := writeBudget + 2*(churnTTL+time.Second) + churnWait + 5*time.Second
	started := n.whileStopped(ctx, i, reach,
		func(page *clockPage) {
			if k, ok := page.held(); ok {
				succeeded = n.churnHolder.succeed(ctx, fmt.Sprintf("churn/r%d", k))
			}
		},
		func(*clockPage) {
			if succeeded {
				n.count("late-churn-holder")
			}
		},
		func() { n.churnBusy.Store(false) })
	if !started {
		n.churnBusy.Store(false)
	}
	return started
}

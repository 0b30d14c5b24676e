package torture

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/torture/check"
)

// A lease-churn worker's leases last churnTTL or a second more, and it
// waits up to churnWait for one: past a holder that let its lease expire,
// or was paused past it.
const (
	churnTTL  = 2 * time.Second
	churnWait = 2*(churnTTL+time.Second) + time.Second
)

// churnRound is a lease-churn worker's round: a short lease on a random
// resource of churn/r0.., a step of its critical section, one write with
// the lease's token, and the lease let go in one of three ways, drawn as
// it is granted and recorded with the grant: released (most rounds); left
// to expire, its keepalives no longer sent, as a holder that crashed
// leaves it; or its keepalives stopped before the write, which it sends
// once its client says the lease has ended and a while after, as a
// holder paused past its TTL sends it. The nemesis stops it too
// (pause-worker, late-churn-holder).
func (w *worker) churnRound(deadline time.Time, n int) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	k := w.rnd.IntN(w.churn)
	r := fmt.Sprintf("r%d", k)
	ttl := churnTTL + time.Duration(w.rnd.IntN(2))*time.Second
	end := check.GrantEndRelease
	switch roll := w.rnd.IntN(10); {
	case roll == 0:
		end = check.GrantEndExpire
	case roll == 1:
		end = check.GrantEndPause
	}
	pause := time.Duration(w.rnd.Int64N(int64(ttl)))
	lag := w.lag()
	lease, err := w.grants.acquire(ctx, w.pick(), "churn/"+r, client.AcquireOptions{TTL: ttl, Wait: churnWait}, end)
	if err != nil {
		time.Sleep(50 * time.Millisecond)
		return
	}
	w.step()
	if w.page != nil {
		w.page.setHeld(k) // for the nemesis, if it stops this worker now
	}
	w.suspendIfAsked()
	if end == check.GrantEndPause {
		w.keepalives.abandon(lease)
		select {
		case <-lease.Done():
		case <-ctx.Done():
			return
		}
		time.Sleep(pause)
	}
	view := w.leaseView(lease, lag)
	w.write(w.plan(w.pick()), appendOp("churn"), lease.Token(), lease.Resource(), r, fmt.Sprintf("w%d-%d-0", w.id, n), view)
	if end == check.GrantEndRelease {
		_ = lease.Release(context.Background())
		return
	}
	w.keepalives.abandon(lease)
}

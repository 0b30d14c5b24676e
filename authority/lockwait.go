package authority

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// awaitTurn waits, until waitUntil, for the key of lease l (created at
// its token's revision) to be first in line, unless it is already,
// keeping the lease alive meanwhile. With a lock-delay it then waits the
// delay out, renews the lease, so that the holder has its whole TTL from
// now, and records it as the lock's last holder: the delay lease is
// granted after the holder's is renewed, so that it outlives it by the
// delay.
func (a *Etcd) awaitTurn(ctx context.Context, l Lease, opts AcquireOptions, waitUntil time.Time, first bool) error {
	wctx, cancel := context.WithDeadline(ctx, waitUntil)
	defer cancel()
	if err := a.keepWaitingAlive(wctx, l.ID); err != nil {
		return err
	}
	if !first {
		pfx := lockKeyPrefix(l.Resource)
		if err := a.waitTurn(wctx, pfx, pfx+l.ID.String(), l.Token.Revision); err != nil {
			switch {
			case errors.Is(err, ErrLeaseNotFound):
				return err
			case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
				lctx, cancel := bounded(ctx)
				defer cancel()
				return a.lockedError(lctx, l.Resource)
			}
			return unavailable("wait for lock", err)
		}
	}
	if opts.LockDelay == 0 {
		return nil
	}
	if err := a.honourLockDelay(ctx, l.Resource, l.ID, waitUntil); err != nil {
		return err
	}
	ttl, err := a.renewLease(ctx, l.ID)
	if err != nil {
		return err
	}
	kctx, cancel := bounded(ctx)
	defer cancel()
	return a.recordLastHolder(kctx, l.Resource, l.ID, ttl, opts.LockDelay)
}

// errOwnKeyGone ends a wait whose own lock key was deleted.
var errOwnKeyGone = fmt.Errorf("authority: the waiting lease expired or was revoked: %w", ErrLeaseNotFound)

// waitTurn waits until the waiter whose lock key is key (created at rev)
// is first in line, or its own key is gone: a waiter whose lease expires
// while it queues (the gateway paused, etcd's keepalives late) is told at
// once, not when the holder leaves.
func (a *Etcd) waitTurn(ctx context.Context, pfx, key string, rev int64) error {
	return a.whileKeyLives(ctx, key, rev, func(ctx context.Context) error {
		return a.waitPredecessors(ctx, pfx, rev-1)
	})
}

// whileKeyLives runs wait, cut short with errOwnKeyGone if key (created
// at rev) is deleted meanwhile.
func (a *Etcd) whileKeyLives(ctx context.Context, key string, rev int64, wait func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watching := make(chan struct{})
	go func() { // owned: ends with ctx, which ends when waitTurn returns
		defer close(watching)
		for wr := range a.cli.Watch(ctx, key, clientv3.WithRev(rev+1), clientv3.WithFilterPut()) {
			if len(wr.Events) > 0 {
				cancel(errOwnKeyGone)
				return
			}
		}
	}()
	err := wait(ctx)
	if cause := context.Cause(ctx); errors.Is(cause, errOwnKeyGone) {
		err = cause
	}
	cancel(nil)
	<-watching
	return err
}

// waitPredecessors returns once no key of pfx created at or before maxRev
// remains. Each round watches only the newest such key.
func (a *Etcd) waitPredecessors(ctx context.Context, pfx string, maxRev int64) error {
	opts := append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(maxRev))
	for {
		resp, err := a.cli.Get(ctx, pfx, opts...)
		if err != nil {
			return err
		}
		a.observe(resp.Header.Revision)
		if len(resp.Kvs) == 0 {
			return nil
		}
		if err := a.waitGone(ctx, string(resp.Kvs[0].Key)); err != nil {
			return err
		}
	}
}

// keepWaitingAlive renews lease id until ctx ends: a waiter's lease must
// outlive a wait longer than its TTL.
func (a *Etcd) keepWaitingAlive(ctx context.Context, id LeaseID) error {
	acks, err := a.cli.KeepAlive(ctx, clientv3.LeaseID(id))
	if err != nil {
		return unavailable("keep waiting lease alive", err)
	}
	go func() { // owned by ctx
		for {
			for range acks { // closed when ctx ends, or by etcd's client (below)
			}
			// etcd's client stops renewing a lease, and closes its
			// channel, when a keepalive went unanswered for the lease's
			// TTL (a busy etcd or process): renew it again while the wait
			// lasts. A lease that is gone ends the wait through its key's
			// deletion (whileKeyLives), and ctx with it.
			select {
			case <-ctx.Done():
				return
			case <-time.After(keepAliveAgainAfter):
			}
			if acks, err = a.cli.KeepAlive(ctx, clientv3.LeaseID(id)); err != nil {
				return // ctx ended, or the client closed
			}
		}
	}()
	return nil
}

// keepAliveAgainAfter spaces the renewals of a waiting lease that etcd's
// client gave up on, so that a lease gone does not spin.
const keepAliveAgainAfter = 100 * time.Millisecond

// waitGone returns once key no longer exists. Its watch starts from now:
// etcd tells a watcher that starts at a revision already past only at its
// next sync of lagging watchers, every 100 ms, and on a resource handed
// from holder to holder the revision a waiter read has passed by the time
// it watches, so each handoff waited for that sync. Watched from now, a
// deletion is told at once; one before the watch began shows in the read
// made once it is in place.
func (a *Etcd) waitGone(ctx context.Context, key string) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range a.cli.Watch(wctx, key, clientv3.WithCreatedNotify(), clientv3.WithFilterPut()) {
		if err := wr.Err(); err != nil {
			return err
		}
		if wr.Created {
			resp, err := a.cli.Get(ctx, key, clientv3.WithCountOnly())
			if err != nil {
				return err
			}
			a.observe(resp.Header.Revision)
			if resp.Count == 0 {
				return nil
			}
			continue
		}
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.DELETE {
				return nil
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("authority: watch closed while waiting for the lock")
}

// waitDelete returns at the deletion of key from revision rev on.
func (a *Etcd) waitDelete(ctx context.Context, key string, rev int64) error {
	return a.awaitDeletion(ctx, "the lock", key, rev, anyDeletion)
}

// anyDeletion ends an awaitDeletion at the first deletion.
func anyDeletion(*mvccpb.KeyValue) bool { return true }

// awaitDeletion returns once enough, told of each deletion the watch of
// key (with opts) sees from revision rev on (the key as it was, when opts
// ask for it with clientv3.WithPrevKV), says so, or when etcd compacted
// past rev: the history since rev is gone, so nothing is reported missed
// and the caller reads again. waitingFor names what the caller waits for.
func (a *Etcd) awaitDeletion(ctx context.Context, waitingFor, key string, rev int64, enough func(prev *mvccpb.KeyValue) bool, opts ...clientv3.OpOption) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range a.cli.Watch(wctx, key, append(opts, clientv3.WithRev(rev))...) {
		if wr.CompactRevision != 0 {
			return nil
		}
		if err := wr.Err(); err != nil {
			return err
		}
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.DELETE && enough(ev.PrevKv) {
				return nil
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("authority: watch closed while waiting for " + waitingFor)
}

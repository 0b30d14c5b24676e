package authority

import (
	"context"
	"net/url"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// A lock is etcd's concurrency.Mutex recipe on a lease (lease.go): each
// contender puts a key under the resource's prefix, attached to its
// lease; the holder is the key with the lowest create revision, and that
// revision is its token. Waiting a turn is lockwait.go's, lock-delay
// lockdelay.go's, a semaphore's line and slots semaphore.go's, the
// holder's record for watchers holderrecord.go's.

// lockKeyPrefix is the prefix under which every contender's key for
// resource lives; the holder is the key with the lowest create revision.
func lockKeyPrefix(resource string) string {
	return lockPrefix + url.PathEscape(resource) + "/"
}

// lock puts lease g's key in line for resource, recording signer as the
// signer of its token, and waits its turn. A key first in line is
// granted in the same transaction, when nothing else must come first
// (lockgrant.go); otherwise its grant is recorded once it has the lock.
func (a *Etcd) lock(ctx context.Context, resource string, g grant, opts AcquireOptions, signer string) (Lease, error) {
	// The wait is the client's, measured on this process's monotonic
	// clock; no wall clock decides anything here.
	waitUntil := time.Now().Add(opts.Wait)
	pfx := lockKeyPrefix(resource)
	inLine := append([]txnOp{
		named("lock key", clientv3.OpPut(pfx+g.id.String(), opts.Value, clientv3.WithLease(clientv3.LeaseID(g.id)))),
		named("holder", clientv3.OpGet(pfx, clientv3.WithFirstCreate()...)),
		// The epoch is read in the same transaction as the key is created,
		// so the token is etcd's (epoch, revision) at one instant: a
		// gateway that has not yet noticed an epoch bump still hands out
		// the new epoch.
		named("epoch", clientv3.OpGet(epochKey)),
	}, leaseOps(g.id, opts.Owner)...)
	inLine = append(inLine, signerOps(resource, 0, signer, g.id)...)
	e := a.seenEpoch()
	granted := Lease{ID: g.id, Resource: resource, Token: tokens.Token{Epoch: e.epoch}, signer: signer} // of the transaction's revision
	waiting := append(slices.Clip(inLine), a.waitingOps(g.id, opts)...)
	if opts.Key != "" {
		// Claimed as it joins the line, so that a retry meanwhile joins it
		// instead of queueing a second lease.
		waiting = append(waiting, nest("claim", claim(resource, g.id, opts)))
	}
	granting := append(slices.Clip(inLine), a.grantOps(granted, opts, g.ttl)...)
	switch {
	case opts.Key != "" && opts.LockDelay > 0:
		// Granted once its last-holder record is made, after this: a
		// retry meanwhile waits for that, as it would for a turn.
		granting = append(granting, claimOp(resource, g.id, opts))
	case opts.Key != "":
		granting = append(granting, grantedAcquisitionOp(granted, opts))
	}
	tctx, cancel := bounded(grantCtx(ctx, opts))
	// Grouped with other resources' (txngroup.go) if one is in flight.
	resp, err := a.txns.commit(tctx, txn{ifs: grantIfs(resource, opts, signer, e), then: granting, els: waiting}, lockKeyPrefix(resource))
	cancel()
	if err != nil {
		return Lease{}, unavailable("create lock key", err)
	}
	a.observe(resp.Header.Revision)
	a.sawEpoch(resp.kvs("epoch"))
	myRev := resp.Header.Revision
	if resp.Succeeded {
		granted.Token.Revision = myRev
		if opts.LockDelay > 0 {
			// Its delay lease is granted after its own, so it outlives it.
			err = a.recordLastHolder(ctx, resource, g.id, int64(g.ttl/time.Second), opts.LockDelay)
			if err == nil && opts.Key != "" {
				err = a.recordGrant(ctx, granted, opts, grantedAcquisitionOp(granted, opts))
			}
		}
		if err != nil {
			return Lease{}, err
		}
		return granted, nil
	}

	myEpoch, err := epochOf(resp.kvs("epoch"))
	if err != nil {
		return Lease{}, err
	}
	lease := Lease{ID: g.id, Resource: resource, Token: tokens.Token{Epoch: myEpoch, Revision: myRev}}
	if signerInService(resp) {
		lease.signer = signer
	}
	if opts.Key != "" && !resp.nested("claim").Succeeded {
		return Lease{}, earlierIn(resp.nested("claim"))
	}
	holder := resp.kvs("holder")
	first := len(holder) == 0 || holder[0].CreateRevision == myRev
	if !first && opts.Wait == 0 {
		return Lease{}, a.lockedError(ctx, resource)
	}
	if !first || opts.LockDelay > 0 {
		if err := a.awaitTurn(ctx, lease, opts, waitUntil, first); err != nil {
			return Lease{}, err
		}
	}
	// A lease that waited, and was not renewed for a lock-delay, is as its
	// grant is recorded; as the record, not under ctx when it is keyed.
	err = a.renewing(grantCtx(ctx, opts), g.id, !first && opts.LockDelay == 0, func() error {
		return a.recordLateGrant(ctx, &lease, opts, g.ttl, signer)
	})
	if err != nil {
		return Lease{}, err
	}
	return lease, nil
}

// lockedError names the current holder. If etcd cannot say who holds the
// lock, the answer is that etcd is unavailable, not that someone holds it:
// a wait also runs out when etcd went away and its watch heard nothing.
func (a *Etcd) lockedError(ctx context.Context, resource string) error {
	h, _, err := a.Holder(ctx, resource)
	if err != nil {
		return err
	}
	// No holder (it released between the wait and the look-up): still
	// locked as far as this request goes, by no token to name.
	return &LockedError{Resource: resource, Holder: h}
}

// Holder returns the token of resource's current lock holder, if any.
func (a *Etcd) Holder(ctx context.Context, resource string) (tokens.Token, bool, error) {
	seen := a.seen()
	resp, err := a.cli.Get(ctx, lockKeyPrefix(resource), clientv3.WithFirstCreate()...)
	if err != nil {
		return tokens.Token{}, false, unavailable("read holder", err)
	}
	if err := a.checkBehind(ctx, seen, resp.Header.Revision); err != nil {
		return tokens.Token{}, false, err
	}
	a.observe(resp.Header.Revision)
	if len(resp.Kvs) == 0 {
		return tokens.Token{}, false, nil
	}
	return tokens.Token{Epoch: a.epoch.Load(), Revision: resp.Kvs[0].CreateRevision}, true, nil
}

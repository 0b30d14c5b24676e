package authority

import (
	"context"
	"errors"
	"net/url"
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

// lock creates lease id's lock key on resource, recording signer as the
// signer of its token, and waits its turn.
func (a *Etcd) lock(ctx context.Context, resource string, id LeaseID, opts AcquireOptions, signer string) (Lease, error) {
	// The wait is the client's, measured on this process's monotonic
	// clock; no wall clock decides anything here.
	waitUntil := time.Now().Add(opts.Wait)
	pfx := lockKeyPrefix(resource)
	key := pfx + id.String()
	with := clientv3.WithLease(clientv3.LeaseID(id))
	ops := append([]txnOp{
		named("lock key", clientv3.OpPut(key, opts.Value, with)),
		named("holder", clientv3.OpGet(pfx, clientv3.WithFirstCreate()...)),
		named("owner", clientv3.OpPut(ownerKey(id), opts.Owner, with)),
		// The epoch is read in the same transaction as the key is created,
		// so the token is etcd's (epoch, revision) at one instant: a
		// gateway that has not yet noticed an epoch bump still hands out
		// the new epoch.
		named("epoch", clientv3.OpGet(epochKey)),
		named("client index", clientv3.OpPut(clientKey(opts.Owner, id), "", with)),
	}, signerOps(resource, 0, signer, id)...)
	t := txn{then: ops}
	if opts.Observer != "" {
		// Granted now if no other contender has a key, and no lock delay
		// may hold it back: the grant time is then this transaction's.
		now := a.now()
		granted := func(held bool) txnOp {
			return named("granted", clientv3.OpPut(grantedKey(id), grantedValue(now, opts.Observer, held), with))
		}
		t = txn{
			ifs:  []clientv3.Cmp{clientv3.Compare(clientv3.Version(pfx).WithPrefix(), "=", 0)},
			then: append(ops, granted(opts.LockDelay == 0)),
			els:  append(ops[:len(ops):len(ops)], granted(false)),
		}
	}
	tctx, cancel := bounded(ctx)
	resp, err := t.commit(tctx, a.cli)
	cancel()
	if err != nil {
		return Lease{}, unavailable("create lock key", err)
	}
	a.observe(resp.Header.Revision)
	myRev := resp.Header.Revision
	myEpoch, err := epochOf(resp.kvs("epoch"))
	if err != nil {
		return Lease{}, err
	}
	lease := Lease{ID: id, Resource: resource, Token: tokens.Token{Epoch: myEpoch, Revision: myRev}}
	if signerInService(resp) {
		lease.signer = signer
	}
	owner := resp.kvs("holder")
	isHolder := len(owner) == 0 || owner[0].CreateRevision == myRev
	if isHolder && opts.LockDelay == 0 {
		return lease, nil
	}
	if !isHolder && opts.Wait == 0 {
		return Lease{}, a.lockedError(ctx, resource)
	}

	wctx, cancel := context.WithDeadline(ctx, waitUntil)
	defer cancel()
	if err := a.keepWaitingAlive(wctx, id); err != nil {
		return Lease{}, err
	}
	if !isHolder {
		if err := a.waitTurn(wctx, pfx, key, myRev); err != nil {
			switch {
			case errors.Is(err, ErrLeaseNotFound):
				return Lease{}, err
			case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
				lctx, cancel := bounded(ctx)
				defer cancel()
				return Lease{}, a.lockedError(lctx, resource)
			}
			return Lease{}, unavailable("wait for lock", err)
		}
	}
	if opts.LockDelay > 0 {
		if err := a.honourLockDelay(ctx, resource, id, waitUntil); err != nil {
			return Lease{}, err
		}
	}
	// Refresh the lease so the holder gets its whole TTL from now, and learn
	// whether it expired while waiting (then our key is gone too).
	kctx, cancel := bounded(ctx)
	defer cancel()
	refreshed, err := a.cli.KeepAliveOnce(kctx, clientv3.LeaseID(id))
	if err != nil {
		return Lease{}, leaseError("refresh lease", err)
	}
	if opts.LockDelay > 0 {
		if err := a.recordLastHolder(kctx, resource, id, refreshed.TTL, opts.LockDelay); err != nil {
			return Lease{}, err
		}
	}
	if opts.Observer != "" {
		// Held from now. Only if the key is still there: a lease that
		// expired this instant must not be given a grant it never had.
		put := clientv3.OpPut(grantedKey(id), grantedValue(a.now(), opts.Observer, true), clientv3.WithLease(clientv3.LeaseID(id)))
		if _, err := (txn{ifs: []clientv3.Cmp{clientv3.Compare(clientv3.Version(grantedKey(id)), ">", 0)}, then: []txnOp{named("granted", put)}}).commit(kctx, a.cli); err != nil {
			return Lease{}, unavailable("record the grant", err)
		}
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
	resp, err := a.cli.Get(ctx, lockKeyPrefix(resource), clientv3.WithFirstCreate()...)
	if err != nil {
		return tokens.Token{}, false, unavailable("read holder", err)
	}
	a.observe(resp.Header.Revision)
	if len(resp.Kvs) == 0 {
		return tokens.Token{}, false, nil
	}
	return tokens.Token{Epoch: a.epoch.Load(), Revision: resp.Kvs[0].CreateRevision}, true, nil
}

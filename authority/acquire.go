package authority

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// AcquireOptions says how to take a lock.
type AcquireOptions struct {
	TTL   time.Duration // lease length, MinTTL to MaxTTL
	Wait  time.Duration // how long to queue behind earlier holders; 0 tries once
	Value string        // stored with the lock key, shown to observers
	// LockDelay keeps the lock from being granted for this long after a
	// holder's lease expired (not after a release); see lockdelay.go.
	LockDelay time.Duration
	// Owner names the client the lease belongs to; only it may renew or
	// release the lease.
	Owner string
	// MaxHeld bounds the leases Owner may hold at once, waiters included
	// (0: no bound). It is counted in etcd, so replicas share it; two
	// requests racing for the last one may both get it.
	MaxHeld int64
	// Observer names the replica that measures the lock's hold time when
	// the lease ends (WatchHoldTimes); empty: not measured.
	Observer string
	// MaxHold bounds the hold, renewals and all (holdbound.go); 0: none.
	// TTL may not exceed it.
	MaxHold time.Duration
	// Key, if set, makes the acquisition idempotent (acquirekey.go): a
	// retry with the same Owner and Key gets the first attempt's lease
	// while it lives, instead of a second one.
	Key string
	// Permits, if above 0, makes resource a semaphore of that many
	// permits (semaphore.go): the lease holds one free slot, and its
	// Resource and token are the slot's. At most tokens.MaxPermits; no
	// LockDelay with it.
	Permits int
}

// Acquire takes the lock on resource with a new lease of opts.TTL, waiting
// up to opts.Wait for earlier holders. It follows etcd's mutex
// recipe: each contender creates its own key and waits only for the key
// created just before it, so waiters are served in arrival order without a
// thundering herd. The token is the create revision of the caller's key.
// ctx bounds the whole call; on any failure the lease is revoked.
func (a *Etcd) Acquire(ctx context.Context, resource string, opts AcquireOptions) (Lease, error) {
	ttl, wait := opts.TTL, opts.Wait
	if err := a.Halted(); err != nil {
		return Lease{}, err
	}
	if err := tokens.CheckResource(resource); err != nil {
		return Lease{}, err
	}
	if err := checkValue(opts.Value); err != nil {
		return Lease{}, err
	}
	if ttl < MinTTL || ttl > MaxTTL {
		return Lease{}, fmt.Errorf("%w: %s, want %s to %s", ErrBadTTL, ttl, MinTTL, MaxTTL)
	}
	if wait < 0 || wait > MaxWait {
		return Lease{}, fmt.Errorf("%w: wait %s, want 0 to %s", ErrBadTTL, wait, MaxWait)
	}
	if opts.MaxHold > 0 && ttl > opts.MaxHold {
		return Lease{}, fmt.Errorf("%w: %s, longer than the resource's max_hold %s", ErrBadTTL, ttl, opts.MaxHold)
	}
	if err := checkPermits(resource, opts); err != nil {
		return Lease{}, err
	}
	ring, err := a.keyring(ctx) // before the lock: a lock without a signed token is no use
	if err != nil {
		return Lease{}, err
	}
	signer := ring.Signer()
	for opts.Key != "" {
		// A retry of an acquisition whose lease lives joins it.
		resp, err := a.cli.Get(ctx, acquisitionKey(opts.Owner, opts.Key))
		if err != nil {
			return Lease{}, unavailable("read the acquisition", err)
		}
		if len(resp.Kvs) == 0 {
			break
		}
		rec, err := parseAcquisition(resp.Kvs[0].Value)
		if err != nil {
			return Lease{}, err
		}
		if l, ok, err := a.join(ctx, resource, rec, opts); ok || err != nil {
			return l, err
		}
	}
	if err := a.checkHeld(ctx, opts); err != nil {
		return Lease{}, err
	}
	gctx, cancel := bounded(ctx)
	grant, err := a.cli.Grant(gctx, int64((ttl+time.Second-1)/time.Second))
	cancel()
	if err != nil {
		return Lease{}, unavailable("grant lease", err)
	}
	id := LeaseID(grant.ID)
	if opts.Key != "" {
		rec, first, err := a.claimAcquisition(ctx, resource, id, opts)
		if err == nil && !first {
			// Another attempt with the key was first, a moment ago.
			a.Abandon(ctx, id, opts.Owner)
			l, ok, err := a.join(ctx, resource, rec, opts)
			if !ok && err == nil {
				err = fmt.Errorf("%w: another attempt with this key was under way and ended without a lease; send it again", ErrUnavailable)
			}
			return l, err
		}
		if err != nil {
			a.Abandon(ctx, id, opts.Owner)
			return Lease{}, err
		}
	}
	var lease Lease
	if opts.Permits > 0 {
		lease, err = a.lockPermit(ctx, resource, id, opts, signer)
	} else {
		lease, err = a.lock(ctx, resource, id, opts, signer)
	}
	if err == nil && lease.signer == "" {
		ring, lease.signer, err = a.recordNewSigner(ctx, lease.Resource, lease.Token.Permit, id, signer)
	}
	if err == nil {
		// From the grant: a wait in line is no hold.
		err = a.recordHold(ctx, id, time.Duration(grant.TTL)*time.Second, opts.MaxHold, grantOps(lease, opts.Value)...)
	}
	if err == nil && opts.Key != "" {
		// Not under ctx: a caller that goes away while the record is
		// written would see its commit as failed and abandon the lease
		// that a retry with the key has already read as granted and been
		// given. Its retry is what a keyed lease waits for.
		err = a.grantedAcquisition(context.WithoutCancel(ctx), lease, opts)
	}
	if err != nil {
		a.Abandon(ctx, id, opts.Owner)
		return Lease{}, err
	}
	lease.TTL = time.Duration(grant.TTL) * time.Second
	a.transitions.Add(1)
	// The token is a capability: good for this resource and this owner,
	// signed by the key recorded with the lease.
	lease.Token, _ = ring.SignWith(lease.signer, lease.Token, lease.Resource, opts.Owner)
	return lease, nil
}

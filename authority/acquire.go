package authority

import (
	"context"
	"errors"
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
	for {
		lease, err := a.acquireOnce(ctx, resource, opts, signer)
		var earlier *earlierAttempt
		if errors.As(err, &earlier) {
			// A retry of an acquisition whose lease lives joins it; one
			// whose lease is gone starts afresh.
			if l, ok, err := a.join(ctx, resource, earlier.rec, opts); ok || err != nil {
				return l, err
			}
			continue
		}
		if err != nil {
			return Lease{}, err
		}
		if lease.signer != signer {
			// Its grant recorded the key that signs now, loaded since.
			if ring, err = a.keyring(ctx); err != nil {
				a.Abandon(ctx, lease.ID, opts.Owner)
				return Lease{}, err
			}
		}
		a.transitions.Add(1)
		// The token is a capability: good for this resource and this
		// owner, signed by the key recorded with the lease.
		lease.Token, _ = ring.SignWith(lease.signer, lease.Token, lease.Resource, opts.Owner)
		return lease, nil
	}
}

// acquireOnce grants a lease (leasegrant.go) and takes resource's lock
// with it (lock.go), or a permit (semaphore.go), signing with signer:
// as etcd's Session and Mutex, a lease and then its lock. On any failure
// the lease is abandoned; *earlierAttempt says another attempt with
// opts.Key was first.
func (a *Etcd) acquireOnce(ctx context.Context, resource string, opts AcquireOptions, signer string) (Lease, error) {
	g, err := a.grantLease(ctx, opts)
	if err != nil {
		return Lease{}, err
	}
	take := a.lock
	if opts.Permits > 0 {
		take = a.lockPermit
	}
	lease, err := take(ctx, resource, g, opts, signer)
	if err != nil {
		a.Abandon(ctx, g.id, opts.Owner)
		return Lease{}, err
	}
	lease.TTL = g.ttl
	return lease, nil
}

package authority

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A lease is granted in one round trip together with the reads that
// decide whether it is wanted: the owner's count of leases
// (AcquireOptions.MaxHeld) and the record of an earlier attempt with the
// same idempotency key (acquirekey.go). Asked one after the other, they
// cost an acquisition two round trips more than etcd's Mutex, whose
// session grants its lease alone. A lease that turns out not to be
// wanted goes back at once: it holds no key yet, so the refusal or the
// retry costs its revoke and nothing else.

// grant is a lease granted for an acquisition.
type grant struct {
	id  LeaseID
	ttl time.Duration // as etcd granted it, from the grant
}

// grantLease grants a lease of opts.TTL for an acquisition, unless opts'
// owner holds opts.MaxHeld already (ErrTooManyLeases) or an earlier
// attempt with opts.Key is recorded (*earlierAttempt: the caller joins
// it). ctx bounds it.
func (a *Etcd) grantLease(ctx context.Context, opts AcquireOptions) (grant, error) {
	var held, earlier error
	var wg sync.WaitGroup
	if opts.MaxHeld > 0 {
		wg.Go(func() { held = a.checkHeld(ctx, opts) })
	}
	if opts.Key != "" {
		wg.Go(func() { earlier = a.lookUpAcquisition(ctx, opts) })
	}
	gctx, cancel := bounded(ctx)
	resp, err := a.cli.Grant(gctx, int64((opts.TTL+time.Second-1)/time.Second))
	cancel()
	wg.Wait()
	if err != nil {
		return grant{}, unavailable("grant lease", err)
	}
	g := grant{id: LeaseID(resp.ID), ttl: time.Duration(resp.TTL) * time.Second}
	// An earlier attempt is joined whatever the count: it is the same
	// acquisition, counted once already.
	if err := cmp.Or(earlier, held); err != nil {
		a.dropUnused(ctx, g.id)
		return grant{}, err
	}
	return g, nil
}

// dropUnused gives back lease id, granted a moment ago and holding
// nothing. Best effort: a lease with no key holds no lock, and one that
// stays runs out by its TTL.
func (a *Etcd) dropUnused(ctx context.Context, id LeaseID) {
	ctx, cancel := bounded(context.WithoutCancel(ctx))
	defer cancel()
	_, _ = a.cli.Revoke(ctx, clientv3.LeaseID(id))
}

// checkHeld refuses a lease to an owner who holds opts.MaxHeld already.
func (a *Etcd) checkHeld(ctx context.Context, opts AcquireOptions) error {
	if opts.MaxHeld <= 0 {
		return nil
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := a.cli.Get(ctx, clientsPrefix+url.PathEscape(opts.Owner)+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return unavailable("count the client's leases", err)
	}
	if resp.Count >= opts.MaxHeld {
		return fmt.Errorf("%w: %d leases held or waiting, at most %d: release some first", ErrTooManyLeases, resp.Count, opts.MaxHeld)
	}
	return nil
}

package authority

import (
	"context"
	"errors"
	"net/url"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// A semaphore's admitted lease takes a free slot (semaphore.go): the
// slot's lock key, created only while the slot has none, in a
// transaction that records the grant too unless a read must come first
// (lockgrant.go's recordIfs).

// slotsAt is the lowest free slot of a semaphore (0: none) as read at a
// revision.
type slotsAt struct {
	free int
	rev  int64
}

// grantPermit gives admitted lease g a free slot of semaphore and
// records its grant. known is the slots as read when it was admitted at
// once; after a wait (nil), it renews the lease meanwhile (renewing).
func (a *Etcd) grantPermit(ctx context.Context, semaphore string, g grant, opts AcquireOptions, signer string, waitUntil time.Time, known *slotsAt) (Lease, error) {
	var l Lease
	err := a.renewing(grantCtx(ctx, opts), g.id, known == nil, func() error {
		var recorded bool
		var err error
		l, recorded, err = a.claimSlot(ctx, semaphore, g, opts, signer, waitUntil, known)
		switch {
		case err != nil:
			return err
		case !recorded:
			return a.recordLateGrant(ctx, &l, opts, g.ttl, signer)
		case opts.Key != "":
			// The key's record was made as the lease joined the line,
			// before its token was known: it names it now.
			return a.recordGrant(ctx, l, opts, grantedAcquisitionOp(l, opts))
		}
		return nil
	})
	if err != nil {
		return Lease{}, err
	}
	return l, nil
}

// claimSlot makes admitted lease g the holder of a free slot of
// semaphore, the lowest known says is free (nil: read first): the lock
// key of the slot, created only if the slot has none, with the epoch
// read, the signer recorded and, unless a read must come first, the
// grant (recorded).
func (a *Etcd) claimSlot(ctx context.Context, semaphore string, g grant, opts AcquireOptions, signer string, waitUntil time.Time, known *slotsAt) (_ Lease, recorded bool, _ error) {
	lease := clientv3.WithLease(clientv3.LeaseID(g.id))
	for {
		if known == nil {
			k, err := a.freeSlot(ctx, semaphore, opts.Permits)
			if err != nil {
				return Lease{}, false, err
			}
			known = &k
		}
		free, at := known.free, known.rev
		known = nil
		if free == 0 {
			// Every slot has a key, yet this lease was admitted, so at most
			// N-1 other permit holders live: a key that is no permit
			// holder's sits in a slot (a lock taken on the slot's name
			// itself, which the gateway's policy refuses). Wait for one
			// to go.
			wctx, cancel := context.WithDeadline(ctx, waitUntil)
			err := a.keepWaitingAlive(wctx, g.id)
			if err == nil {
				err = a.waitDeleteUnder(wctx, slotsPrefix(semaphore), at+1)
			}
			cancel()
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
					return Lease{}, false, permitsHeldError(semaphore, opts.Permits)
				}
				return Lease{}, false, unavailable("wait for a free permit slot", err)
			}
			continue
		}
		slot := tokens.PermitResource(semaphore, free)
		spfx := lockKeyPrefix(slot)
		e := a.seenEpoch()
		granted := Lease{ID: g.id, Resource: slot, Token: tokens.Token{Epoch: e.epoch, Permit: free}, signer: signer} // of the transaction's revision
		ops := append([]txnOp{
			named("slot key", clientv3.OpPut(spfx+g.id.String(), opts.Value, lease)),
			named("epoch", clientv3.OpGet(epochKey)),
		}, signerOps(slot, free, signer, g.id)...)
		ops = append(ops, nest("grant", txn{ifs: recordIfs(slot, signer, e), then: a.grantOps(granted, opts, g.ttl)}))
		tctx, cancel := bounded(ctx)
		resp, err := txn{
			ifs:  []clientv3.Cmp{clientv3.Compare(clientv3.Version(spfx).WithPrefix(), "=", 0)},
			then: ops,
			els:  []txnOp{named("slots", slotsRead(semaphore))},
		}.commit(tctx, a.cli)
		cancel()
		if err != nil {
			return Lease{}, false, leaseError("claim a permit slot", err)
		}
		rev := resp.Header.Revision
		a.observe(rev)
		if !resp.Succeeded {
			// Another admitted lease took it first: the slots as they are.
			known = &slotsAt{free: freeSlotIn(resp.kvs("slots"), semaphore, opts.Permits), rev: rev}
			continue
		}
		a.sawEpoch(resp.kvs("epoch"))
		if resp.nested("grant").Succeeded {
			granted.Token.Revision = rev
			return granted, true, nil
		}
		epoch, err := epochOf(resp.kvs("epoch"))
		if err != nil {
			return Lease{}, false, err
		}
		l := Lease{ID: g.id, Resource: slot, Token: tokens.Token{Epoch: epoch, Revision: rev, Permit: free}}
		if signerInService(resp) {
			l.signer = signer
		}
		return l, false, nil
	}
}

// slotsPrefix is where the lock keys of every slot of semaphore start
// (and of any other resource whose name starts with semaphore + "#").
func slotsPrefix(semaphore string) string {
	return lockPrefix + url.PathEscape(semaphore+tokens.PermitSeparator)
}

// slotsRead reads the lock keys of semaphore's slots (freeSlotIn).
func slotsRead(semaphore string) clientv3.Op {
	return clientv3.OpGet(slotsPrefix(semaphore), clientv3.WithPrefix(), clientv3.WithKeysOnly())
}

// freeSlot reads the lowest slot of semaphore's permits that has no lock
// key.
func (a *Etcd) freeSlot(ctx context.Context, semaphore string, permits int) (slotsAt, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := reads(named("slots", slotsRead(semaphore))).commit(ctx, a.cli)
	if err != nil {
		return slotsAt{}, unavailable("read the permit slots", err)
	}
	a.observe(resp.Header.Revision)
	return slotsAt{free: freeSlotIn(resp.kvs("slots"), semaphore, permits), rev: resp.Header.Revision}, nil
}

// freeSlotIn is the lowest slot of semaphore's permits that has no key
// among the lock keys kvs (slotsRead), 0 if none.
func freeSlotIn(kvs []*mvccpb.KeyValue, semaphore string, permits int) int {
	taken := make([]bool, permits+1)
	for _, kv := range kvs {
		resource, _, ok := lockKeyResource(string(kv.Key))
		if !ok {
			continue
		}
		if sem, k, ok := tokens.SplitPermitResource(resource); ok && sem == semaphore && k <= permits {
			taken[k] = true
		}
	}
	for k := 1; k <= permits; k++ {
		if !taken[k] {
			return k
		}
	}
	return 0
}

// waitDeleteUnder returns at the first deletion of a key under pfx from
// revision rev on, or when etcd compacted past rev (the caller reads
// again).
func (a *Etcd) waitDeleteUnder(ctx context.Context, pfx string, rev int64) error {
	return a.awaitDeletion(ctx, "a permit slot", pfx, rev, anyDeletion, clientv3.WithPrefix(), clientv3.WithFilterPut())
}

package authority

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Release revokes owner's lease id, deleting its lock key so the next
// waiter runs.
func (a *Etcd) Release(ctx context.Context, id LeaseID, owner string) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	delay, err := a.markReleased(ctx, id, owner)
	if err != nil {
		return err
	}
	// The last-holder record goes first: the holder said it is done, so if
	// the revoke then fails and the lease runs out instead, no lock-delay
	// is owed. The other order could delay a successor after a release.
	if err := a.dropLastHolder(ctx, delay); err != nil {
		return err
	}
	resp, err := a.cli.Revoke(ctx, clientv3.LeaseID(id))
	if err != nil {
		return leaseError("release lease", err)
	}
	a.observe(resp.Header.Revision)
	return nil
}

// markReleased checks that owner owns lease id and, in the same
// transaction, marks it as ending by release (markEnding's record, in
// the round trip the owner check takes anyway); it returns the lease's
// lock-delay record, if any. It is grouped with acquisitions' and other
// releases' transactions when one is in flight (txngroup.go).
func (a *Etcd) markReleased(ctx context.Context, id LeaseID, owner string) (*delayRecord, error) {
	b, _ := json.Marshal(ending{How: EndReleased}) // strings only: cannot fail
	resp, err := a.txns.commit(ctx, txn{
		ifs: []clientv3.Cmp{clientv3.Compare(clientv3.Value(ownerKey(id)), "=", owner)},
		then: []txnOp{
			named("ending", clientv3.OpPut(endingKey(id), string(b), clientv3.WithLease(clientv3.LeaseID(id)))),
			named("delay", clientv3.OpGet(delayIndexKey(id))),
		},
		els: []txnOp{named("owner", clientv3.OpGet(ownerKey(id)))},
	})
	if err != nil {
		return nil, leaseError("release lease", err)
	}
	if !resp.Succeeded {
		if err := ownerIs(resp.kvs("owner"), id, owner); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("lease %s: %w", id, ErrNotOwner) // changed between the compare and the read
	}
	return delayOf(resp.kvs("delay")), nil
}

// cleanupTimeout bounds each attempt to revoke the lease of a failed
// acquisition; abandonedBackoff is the longest pause between attempts, and
// so about how long an abandoned waiter may hold its lock once etcd is back.
const (
	cleanupTimeout   = 5 * time.Second
	abandonedBackoff = 5 * time.Second
)

// Abandon gives up lease id, owned by owner, whose token nobody received:
// an acquisition that failed or was given up, or one granted to a client
// that went away before it learnt the ID. etcd itself may be why, and then
// the revoke fails too: the lease would stay a waiter in line, or a
// holder, that no client knows of, and keep the lock for its TTL (etcd
// restarts every lease's TTL when it comes back). So a failed revoke is
// tried again in the background, backing off, until etcd has done it or
// says the lease is gone or not owner's, or the client is closed. No time
// limit: however long etcd is away, the lease is alive again when it
// returns. The goroutines are bounded by the acquisitions that had a lease
// granted when etcd went away. No lock-delay is owed after a lease whose
// token nobody received, so its last-holder record goes first.
func (a *Etcd) Abandon(ctx context.Context, id LeaseID, owner string) {
	revoke := func(ctx context.Context) bool {
		cctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
		defer cancel()
		// Best effort, as the record below: a lease whose token nobody
		// received was the gateway's to end, not its holder's.
		_ = a.markEnding(cctx, id, ending{How: EndRevoked, Actor: GatewayActor, Reason: "abandoned: its client never received the token"})
		if resp, err := a.cli.Get(cctx, delayIndexKey(id)); err == nil {
			_ = a.dropLastHolder(cctx, delayOf(resp.Kvs)) // best effort: a lock-delay not owed
		}
		_, err := a.cli.Revoke(cctx, clientv3.LeaseID(id))
		return err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound)
	}
	if revoke(context.WithoutCancel(ctx)) {
		return
	}
	go func() {
		cctx := a.cli.Ctx() // done when the client is closed
		for backoff := time.Second; ; backoff = min(2*backoff, abandonedBackoff) {
			select {
			case <-cctx.Done():
				return
			case <-time.After(backoff):
			}
			// Later attempts check the owner first: an etcd member restarted
			// with its clock set back could reissue the ID to someone else.
			// Without its owner key the lease holds no lock either.
			rctx, cancel := context.WithTimeout(cctx, cleanupTimeout)
			_, err := a.checkOwner(rctx, id, owner)
			cancel()
			switch {
			case errors.Is(err, ErrLeaseNotFound), errors.Is(err, ErrNotOwner):
				return
			case err == nil && revoke(cctx):
				return
			}
		}
	}()
}

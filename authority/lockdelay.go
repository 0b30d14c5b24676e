package authority

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Lock-delay (Chubby): when a holder's lease EXPIRES, its resource is not
// granted again for a while, so that a holder that is merely slow —
// paused, partitioned — has time to notice and stop before a successor
// starts. A RELEASED lock is granted at once: its holder said it was done.
//
// etcd's clock alone decides when the delay ends; no gateway reads its
// own. A holder of a resource with a lock-delay has a last-holder record,
// /fencegw/lastholder/<resource>, naming its lease, attached to a second
// etcd lease of its own (the delay lease) whose TTL is the holder's TTL
// plus the delay plus a second. The delay lease is granted when the lock
// is granted, right after the holder's lease was refreshed, and renewed
// right after the holder's lease at every keepalive: it always outlives
// the holder's lease by at least the delay (the extra second covers the
// two leases being renewed by two calls, and TTLs being whole seconds).
//   - Release revokes the delay lease before the holder's: the record is
//     gone, no delay is owed.
//   - Expiry leaves the delay lease running alone; etcd deletes the record
//     when it runs out, the delay (and at most about two seconds) after
//     the holder's lease expired.
//
// The next holder, granted the lock while the record names another lease,
// waits for etcd to delete it (a watch, no timer) before it takes the
// lock, or is refused at once if etcd says the record outlives its wait.
// A holder's lease finds its delay lease through delayIndexKey, attached to
// the holder's lease, so a keepalive costs no extra read. It is advice to
// well-behaved holders; the fence remains the guarantee.
const (
	lastHolderPrefix = "/fencegw/lastholder/"
	delayIndexPrefix = "/fencegw/delays/"
)

func lastHolderKey(resource string) string { return lastHolderPrefix + url.PathEscape(resource) }

func delayIndexKey(id LeaseID) string { return delayIndexPrefix + id.String() }

// delayRecord is the value of a holder's delayIndexKey: its delay lease,
// and what it takes to grant it again.
type delayRecord struct {
	Lease    string `json:"lease"` // the delay lease, hex
	Resource string `json:"resource"`
	TTL      int64  `json:"ttl"` // the delay lease's, seconds
}

func (d delayRecord) leaseID() LeaseID {
	id, _ := ParseLeaseID(d.Lease)
	return id
}

// delayTTL is the delay lease's TTL for a holder's TTL and a delay.
func delayTTL(holderTTL int64, delay time.Duration) int64 {
	return holderTTL + int64((delay+time.Second-1)/time.Second) + 1
}

// honourLockDelay runs once the caller's key is the holder. While the
// resource's last-holder record names another lease (an expired holder's),
// it waits for etcd to delete it — or fails at once with a *LockedError if
// etcd says it lasts longer than waitUntil. ctx bounds the etcd calls.
func (a *Etcd) honourLockDelay(ctx context.Context, resource string, id LeaseID, waitUntil time.Time) error {
	key := lastHolderKey(resource)
	for {
		resp, err := a.cli.Get(ctx, key)
		if err != nil {
			return unavailable("read last holder", err)
		}
		if len(resp.Kvs) == 0 || string(resp.Kvs[0].Value) == id.String() {
			return nil
		}
		kv := resp.Kvs[0]
		ttl, err := a.cli.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
		if err != nil {
			return unavailable("read lock-delay", err)
		}
		left := time.Duration(ttl.TTL) * time.Second
		if left > time.Until(waitUntil) {
			return a.lockDelayError(resource, left)
		}
		wctx, cancel := context.WithDeadline(ctx, waitUntil)
		err = a.waitDelete(wctx, key, resp.Header.Revision+1)
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			return a.lockDelayError(resource, 0)
		case err != nil:
			return unavailable("wait out lock-delay", err)
		}
	}
}

// recordLastHolder makes lease id, granted holderTTL seconds from now, the
// last holder of resource: a delay lease, the record on it, and the index
// on the holder's lease. Call it after the holder's lease was refreshed.
func (a *Etcd) recordLastHolder(ctx context.Context, resource string, id LeaseID, holderTTL int64, delay time.Duration) error {
	return a.putLastHolder(ctx, delayRecord{Resource: resource, TTL: delayTTL(holderTTL, delay)}, id)
}

func (a *Etcd) putLastHolder(ctx context.Context, rec delayRecord, id LeaseID) error {
	grant, err := a.cli.Grant(ctx, rec.TTL)
	if err != nil {
		return unavailable("grant the lock-delay lease", err)
	}
	rec.Lease = LeaseID(grant.ID).String()
	b, _ := json.Marshal(rec)
	// Only while the holder's lock key is there: a lease that expired
	// meanwhile must not leave a record that delays its successor twice.
	lockKey := lockKeyPrefix(rec.Resource) + id.String()
	resp, err := txn{
		ifs: []clientv3.Cmp{clientv3.Compare(clientv3.Version(lockKey), ">", 0)},
		then: []txnOp{
			named("last holder", clientv3.OpPut(lastHolderKey(rec.Resource), id.String(), clientv3.WithLease(grant.ID))),
			named("delay", clientv3.OpPut(delayIndexKey(id), string(b), clientv3.WithLease(clientv3.LeaseID(id)))),
		},
	}.commit(ctx, a.cli)
	if err == nil && !resp.Succeeded {
		err = fmt.Errorf("lease %s: %w", id, ErrLeaseNotFound)
	}
	if err != nil {
		_, _ = a.cli.Revoke(context.WithoutCancel(ctx), grant.ID)
		return leaseError("record last holder", err)
	}
	return nil
}

// renewDelay renews lease id's delay lease, after the holder's own was
// renewed. A delay lease that is gone while its holder lives (its renewals
// failed for longer than the delay) is granted again.
func (a *Etcd) renewDelay(ctx context.Context, id LeaseID, rec *delayRecord) error {
	if rec == nil {
		return nil
	}
	_, err := a.cli.KeepAliveOnce(ctx, clientv3.LeaseID(rec.leaseID()))
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return a.putLastHolder(ctx, *rec, id)
	}
	if err != nil {
		return unavailable("renew the lock-delay lease", err)
	}
	return nil
}

// dropLastHolder marks a lease's lock as released, not expired: it
// revokes the delay lease, and with it the last-holder record.
func (a *Etcd) dropLastHolder(ctx context.Context, rec *delayRecord) error {
	if rec == nil {
		return nil
	}
	_, err := a.cli.Revoke(ctx, clientv3.LeaseID(rec.leaseID()))
	if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return unavailable("forget last holder", err)
	}
	return nil
}

// delayOf reads a delayIndexKey value; nil for none.
func delayOf(kvs []*mvccpb.KeyValue) *delayRecord {
	if len(kvs) == 0 {
		return nil
	}
	var rec delayRecord
	if json.Unmarshal(kvs[0].Value, &rec) != nil || rec.leaseID() == 0 {
		return nil
	}
	return &rec
}

func (a *Etcd) lockDelayError(resource string, left time.Duration) error {
	if left <= 0 {
		return fmt.Errorf("%w: in lock-delay after its last holder's lease expired", &LockedError{Resource: resource})
	}
	return fmt.Errorf("%w: in lock-delay for about %s more after its last holder's lease expired", &LockedError{Resource: resource}, left)
}

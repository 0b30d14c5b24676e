package authority

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A grant is recorded in one transaction: the holder record and the
// transitions count (holderrecord.go), the hold records (holdbound.go),
// the hold-time observer's mark (holdtime.go) and a keyed acquisition's
// record (acquirekey.go).
//
// A lease first in line is granted in the very transaction that puts its
// key in line, as etcd's Mutex takes a free lock with its one Txn: an
// uncontended acquisition costs the lease's grant and that transaction,
// two round trips and two proposals, and its release two more, as the
// Mutex's Lock, Unlock and session do. The transaction grants only if
// its If says that the key it puts will be first in line and that
// nothing the grant records needs a read first:
//   - no key is in line: the lock is free;
//   - no holder record is there: the one it creates has the
//     transaction's revision, the token's, as its create revision, and
//     need not name a revision not known until etcd applies it;
//   - the epoch key is as this process last read it: the token's epoch
//     is the one read then;
//   - the signing key is in service, so that the lease's record of it
//     holds (signers.go);
//   - with lock-delay, no last-holder record is there (lockdelay.go);
//   - with an idempotency key, no attempt recorded it.
//
// Otherwise the transaction only puts the key in line, and the grant is
// recorded once the lease has the lock (recordGrant): after its wait, or
// at once when it is first in line all the same (an epoch or a signer
// that changed).

// grantIfs are the conditions under which a key put in line for resource
// is granted in the same transaction, e the epoch key as last read.
func grantIfs(resource string, opts AcquireOptions, signer string, e epochAt) []clientv3.Cmp {
	// Over a range: true only if no key is in it.
	ifs := append([]clientv3.Cmp{clientv3.Compare(clientv3.Version(lockKeyPrefix(resource)).WithPrefix(), "=", 0)}, recordIfs(resource, signer, e)...)
	if opts.LockDelay > 0 {
		ifs = append(ifs, clientv3.Compare(clientv3.CreateRevision(lastHolderKey(resource)), "=", 0))
	}
	if opts.Key != "" {
		ifs = append(ifs, clientv3.Compare(clientv3.CreateRevision(acquisitionKey(opts.Owner, opts.Key)), "=", 0))
	}
	return ifs
}

// recordIfs are the conditions under which the grant of a key of
// resource, created in the same transaction, is recorded in it: the
// records it creates take the transaction's revision, the token's, as
// their create revision, and name the epoch and signer compared.
func recordIfs(resource string, signer string, e epochAt) []clientv3.Cmp {
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(holderRecordKey(resource)), "=", 0),
		clientv3.Compare(clientv3.ModRevision(epochKey), "=", e.modRevision),
		clientv3.Compare(clientv3.CreateRevision(keysPrefix+signer), ">", 0),
	}
}

// grantOps record the grant of lease l, of ttl from its grant (a wait in
// line is no hold), but for a keyed acquisition's record
// (grantedAcquisitionOp). A token of revision 0 is the one the
// transaction issues.
func (a *Etcd) grantOps(l Lease, opts AcquireOptions, ttl time.Duration) []txnOp {
	now := a.now()
	ops := append(holderOps(l, opts.Value), holdOps(l.ID, ttl, opts.MaxHold, now)...)
	if opts.Observer != "" {
		ops = append(ops, grantedOp(l.ID, opts.Observer, now, true))
	}
	return ops
}

// allGrantOps are grantOps and a keyed acquisition's record.
func (a *Etcd) allGrantOps(l Lease, opts AcquireOptions, ttl time.Duration) []txnOp {
	ops := a.grantOps(l, opts, ttl)
	if opts.Key != "" {
		ops = append(ops, grantedAcquisitionOp(l, opts))
	}
	return ops
}

// waitingOps mark a lease put in line and not granted yet.
func (a *Etcd) waitingOps(id LeaseID, opts AcquireOptions) []txnOp {
	if opts.Observer == "" {
		return nil
	}
	return []txnOp{grantedOp(id, opts.Observer, a.now(), false)}
}

// grantCtx is the context a grant is recorded under. A keyed grant's is
// not ctx: a caller that goes away while the record is written would see
// its commit as failed and abandon the lease that a retry with the key
// has already read as granted and been given. Its retry is what a keyed
// lease waits for.
func grantCtx(ctx context.Context, opts AcquireOptions) context.Context {
	if opts.Key != "" {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// recordGrant puts the records ops of the grant of lease l, once l has
// its lock: only while its key is there, so that a lease that ended this
// instant is not recorded as granted.
func (a *Etcd) recordGrant(ctx context.Context, l Lease, opts AcquireOptions, ops ...txnOp) error {
	ctx, cancel := bounded(grantCtx(ctx, opts))
	defer cancel()
	resp, err := txn{
		ifs:  []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(lockKeyPrefix(l.Resource)+l.ID.String()), "=", l.Token.Revision)},
		then: ops,
	}.commit(ctx, a.cli)
	switch {
	case err != nil:
		return leaseError("record the grant", err)
	case !resp.Succeeded:
		return fmt.Errorf("lease %s: %w", l.ID, ErrLeaseNotFound)
	}
	a.observe(resp.Header.Revision)
	return nil
}

// recordLateGrant records the grant of lease l, which has its lock now,
// after the transaction that gave it the lock (recordGrant); first the
// signer of its token, if that transaction found old (this process's
// signing key) retired: it reloads the keys and records the key that
// signs now in its place.
func (a *Etcd) recordLateGrant(ctx context.Context, l *Lease, opts AcquireOptions, ttl time.Duration, old string) error {
	if l.signer == "" {
		signer, err := a.recordNewSigner(ctx, l.Resource, l.Token.Permit, l.ID, old)
		if err != nil {
			return err
		}
		l.signer = signer
	}
	return a.recordGrant(ctx, *l, opts, a.allGrantOps(*l, opts, ttl)...)
}

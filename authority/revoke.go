package authority

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// GatewayActor names the gateway itself as the one that revoked a lease
// (the reaper, an abandoned grant), where an operator's revoke names the
// operator's client.
const GatewayActor = "fencegw"

// ErrNoLock means a resource that nobody holds: there is no holder to
// revoke.
var ErrNoLock = errors.New("authority: the resource has no lock")

// LeaseInfo is what an operator is shown of a lease: its lock, token and
// owner, and whether it still waits for the lock (in line, or out a
// lock-delay). A contender in a semaphore's line that has no slot yet
// has no token: Resource is then the semaphore's name, Token zero.
type LeaseInfo struct {
	ID       LeaseID
	Resource string
	Token    tokens.Token // unsigned
	Owner    string       // "" when authentication is off
	Waiting  bool
}

// LeaseInfo reads what lease id is; ErrLeaseNotFound for a lease fencegw
// does not know (expired, released, or never its own). ctx bounds it.
func (a *Etcd) LeaseInfo(ctx context.Context, id LeaseID) (LeaseInfo, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := reads(
		named("owner", clientv3.OpGet(ownerKey(id))),
		named("token record", clientv3.OpGet(leaseTokenKey(id))),
		named("granted", clientv3.OpGet(grantedKey(id))),
		named("permit wait", clientv3.OpGet(permitWaitKey(id))),
	).commit(ctx, a.cli)
	if err != nil {
		return LeaseInfo{}, unavailable("read the lease", err)
	}
	owner, rec := resp.kvs("owner"), resp.kvs("token record")
	if wait := resp.kvs("permit wait"); len(owner) > 0 && len(rec) == 0 && len(wait) > 0 {
		return LeaseInfo{ID: id, Resource: string(wait[0].Value), Owner: string(owner[0].Value), Waiting: true}, nil
	}
	if len(owner) == 0 || len(rec) == 0 {
		return LeaseInfo{}, fmt.Errorf("lease %s: %w", id, ErrLeaseNotFound)
	}
	var lt leaseToken
	if err := json.Unmarshal(rec[0].Value, &lt); err != nil {
		return LeaseInfo{}, fmt.Errorf("lease %s: %w: its token record is not fencegw's", id, ErrForeignKey)
	}
	epochs, err := a.epochsAt(ctx)
	if err != nil {
		return LeaseInfo{}, err
	}
	info := LeaseInfo{ID: id, Resource: lt.Resource, Owner: string(owner[0].Value),
		Token: tokens.Token{Epoch: epochs(rec[0].CreateRevision), Revision: rec[0].CreateRevision, Permit: lt.Permit}}
	if g := resp.kvs("granted"); len(g) > 0 {
		_, _, held, ok := parseGranted(string(g[0].Value))
		info.Waiting = ok && !held
	}
	return info, nil
}

// HolderLease reads the lease that holds resource's lock; ErrNoLock when
// nobody holds it. ctx bounds it.
func (a *Etcd) HolderLease(ctx context.Context, resource string) (LeaseInfo, error) {
	if err := tokens.CheckResource(resource); err != nil {
		return LeaseInfo{}, err
	}
	bctx, cancel := bounded(ctx)
	resp, err := a.cli.Get(bctx, lockKeyPrefix(resource), clientv3.WithFirstCreate()...)
	cancel()
	if err != nil {
		return LeaseInfo{}, unavailable("read holder", err)
	}
	if len(resp.Kvs) == 0 {
		return LeaseInfo{}, fmt.Errorf("%w: %s", ErrNoLock, resource)
	}
	info, err := a.LeaseInfo(ctx, LeaseID(resp.Kvs[0].Lease))
	if errors.Is(err, ErrLeaseNotFound) {
		// It ended between the two reads: nobody holds it as far as this
		// call goes.
		return LeaseInfo{}, fmt.Errorf("%w: %s (its holder's lease just ended)", ErrNoLock, resource)
	}
	return info, err
}

// Revoke ends lease id, whoever owns it, for an operator: its lock passes
// on, and its end is recorded as revoked by actor for reason. A lock-delay
// still follows it, as after an expiry: its holder did not say it was
// done, and may still be running. ctx bounds it.
func (a *Etcd) Revoke(ctx context.Context, id LeaseID, actor, reason string) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	if err := a.markEnding(ctx, id, ending{How: EndRevoked, Actor: actor, Reason: reason}); err != nil {
		return err
	}
	resp, err := a.cli.Revoke(ctx, clientv3.LeaseID(id))
	if err != nil {
		return leaseError("revoke lease", err)
	}
	a.observe(resp.Header.Revision)
	return nil
}

// FirstToKeep returns the lowest token that must still write once
// resource's fence is advanced past every token issued so far, with the
// lock as seen: the first waiter's, when leases wait (holders come before
// waiters, so every holder's token is below it, and every waiter's at or
// above it); else the next revision etcd issues, in the current epoch
// (every token issued is below it; the next grant's key is created at it
// or later). ctx bounds it.
func (a *Etcd) FirstToKeep(ctx context.Context, resource string) (tokens.Token, LockState, error) {
	st, err := a.Observe(ctx, resource)
	if err != nil {
		return tokens.Token{}, LockState{}, err
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	epochs, err := a.epochsAt(ctx)
	if err != nil {
		return tokens.Token{}, LockState{}, err
	}
	if st.Holder != nil {
		// The first in line may not have the lock yet (it waits out a
		// lock-delay, or its grant is being recorded): it is cut off
		// only once granted.
		info, err := a.LeaseInfo(ctx, st.Holder.LeaseID)
		if err != nil && !errors.Is(err, ErrLeaseNotFound) {
			return tokens.Token{}, LockState{}, err
		}
		if err == nil && info.Waiting {
			return info.Token, st, nil
		}
	}
	if len(st.Waiters) > 0 {
		w := st.Waiters[0].Token.Unsigned()
		if w.Epoch == 0 { // etcd no longer remembers its epoch: the current one is not older
			w.Epoch = epochs(st.Revision + 1)
		}
		return w, st, nil
	}
	return tokens.Token{Epoch: epochs(st.Revision + 1), Revision: st.Revision + 1}, st, nil
}

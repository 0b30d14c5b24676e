package authority

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// Semaphores. A semaphore of N permits (AcquireOptions.Permits) is held
// by up to N leases at once, each in one permit slot (1 to N) with a lock
// and a fence of its own, so that a permit holder paused past its lease
// is refused at its slot's fence once the slot's new holder has written,
// as an exclusive lock's holder would be.
//
// Two steps, both in etcd:
//   - The line: each contender creates a key under
//     /fencegw/queues/<escaped semaphore>/<lease id>, attached to its
//     lease. A contender with fewer than N keys created before its own is
//     admitted; new keys come after it and deletions only shrink the keys
//     before it, so once admitted it stays among the first N live keys.
//     Every admitted live lease is among those N: at most N are admitted
//     at once, in arrival order (FIFO). A waiter watches the line for
//     deletions (a herd of its waiters, not of the whole semaphore's
//     writes).
//   - The slot: an admitted lease creates the lock key of a free slot,
//     lockKeyPrefix(tokens.PermitResource(semaphore, k)) + its lease id,
//     in one transaction that succeeds only if the slot has no key. Slot
//     keys die with their lease, as queue keys do, so at most the N
//     admitted leases hold slots, and two live holders never share a
//     slot. An admitted one finds a slot free unless a key that is no
//     permit holder's sits in one (a lock on the slot's own name, or a
//     replica with another N during a policy change): it then waits for
//     one to go (claimSlot).
//
// The token is the slot key's create revision, with the permit k; it is
// signed for the slot's resource. A slot key is created only when the
// slot has none, at etcd's newest revision, so each holder of a slot has
// a higher token than every earlier holder of it: the slot's fence
// (monotonic) refuses a paused earlier holder and never a new one. Slot
// keys are lock keys like any other (under lockPrefix: TokenFloor sees
// them, Holder and holder validation, observation, watches, history and
// operator revokes work per slot); queue keys are no tokens, and live
// apart so that nothing reads them as locks.
//
// Lock-delay does not apply to semaphores (the policy refuses it).
const queuesPrefix = "/fencegw/queues/"

func queueKeyPrefix(semaphore string) string { return queuesPrefix + url.PathEscape(semaphore) + "/" }

// queueKeyParts reads a key of a semaphore's line: the semaphore and the
// lease in line; ok false for a key that is no line key of ours.
func queueKeyParts(key string) (semaphore string, id LeaseID, ok bool) {
	rest, found := strings.CutPrefix(key, queuesPrefix)
	i := strings.LastIndexByte(rest, '/')
	if !found || i < 0 {
		return "", 0, false
	}
	semaphore, err1 := url.PathUnescape(rest[:i])
	id, err2 := ParseLeaseID(rest[i+1:])
	return semaphore, id, err1 == nil && err2 == nil
}

// permitWaitsPrefix keeps, per lease in a semaphore's line, the
// semaphore's name, attached to the lease: what LeaseInfo shows of a
// contender that has no token yet (its token record is written with its
// slot), so that an operator can find it and revoke it.
const permitWaitsPrefix = "/fencegw/permit-waits/"

func permitWaitKey(id LeaseID) string { return permitWaitsPrefix + id.String() }

// ErrBadPermits is a permit count out of range, or asked with what a
// semaphore does not have.
var ErrBadPermits = errors.New("authority: bad permits")

// lockPermit puts lease g in semaphore's line and gives it a free slot
// once fewer than opts.Permits leases are ahead of it. The transaction
// that puts it in line reads the line ahead of it and the slots too, so
// that one admitted at once claims its slot with one transaction more.
func (a *Etcd) lockPermit(ctx context.Context, semaphore string, g grant, opts AcquireOptions, signer string) (Lease, error) {
	waitUntil := time.Now().Add(opts.Wait)
	id := g.id
	qpfx := queueKeyPrefix(semaphore)
	qkey := qpfx + id.String()
	lease := clientv3.WithLease(clientv3.LeaseID(id))
	ops := append([]txnOp{
		// Read before the line key is put: every key there is ahead of it.
		named("ahead", clientv3.OpGet(qpfx, clientv3.WithPrefix(), clientv3.WithCountOnly())),
		named("slots", slotsRead(semaphore)),
		named("line key", clientv3.OpPut(qkey, opts.Value, lease)),
		named("permit wait", clientv3.OpPut(permitWaitKey(id), semaphore, lease)),
	}, leaseOps(id, opts.Owner)...)
	ops = append(ops, a.waitingOps(id, opts)...)
	t := txn{then: ops}
	if opts.Key != "" {
		// Claimed as it joins the line, so that a retry meanwhile joins it
		// instead of queueing a second lease; after another attempt, it
		// joins nothing.
		t = claim(semaphore, id, opts, ops...)
	}
	tctx, cancel := bounded(ctx)
	resp, err := t.commit(tctx, a.cli)
	cancel()
	if err != nil {
		return Lease{}, unavailable("join the semaphore's line", err)
	}
	myRev := resp.Header.Revision
	a.observe(myRev)
	if !resp.Succeeded {
		return Lease{}, earlierIn(resp)
	}
	if resp.count("ahead") < int64(opts.Permits) {
		known := slotsAt{free: freeSlotIn(resp.kvs("slots"), semaphore, opts.Permits), rev: myRev}
		return a.grantPermit(ctx, semaphore, g, opts, signer, waitUntil, &known)
	}
	if opts.Wait == 0 {
		return Lease{}, permitsHeldError(semaphore, opts.Permits)
	}
	wctx, cancel := context.WithDeadline(ctx, waitUntil)
	defer cancel()
	if err := a.keepWaitingAlive(wctx, id); err != nil {
		return Lease{}, err
	}
	err = a.whileKeyLives(wctx, qkey, myRev, func(ctx context.Context) error {
		return a.waitAdmitted(ctx, qpfx, myRev, opts.Permits)
	})
	if err != nil {
		switch {
		case errors.Is(err, ErrLeaseNotFound):
			return Lease{}, err
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			return Lease{}, permitsHeldError(semaphore, opts.Permits)
		}
		return Lease{}, unavailable("wait for a permit", err)
	}
	return a.grantPermit(ctx, semaphore, g, opts, signer, waitUntil, nil)
}

// before counts the keys of the line qpfx created before rev, and the
// revision it read them at.
func (a *Etcd) before(ctx context.Context, qpfx string, rev int64) (int, int64, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	// Keys only, not a count: etcd counts a range before it applies the
	// create-revision filter.
	resp, err := a.cli.Get(ctx, qpfx, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithMaxCreateRev(rev-1))
	if err != nil {
		return 0, 0, err
	}
	a.observe(resp.Header.Revision)
	return len(resp.Kvs), resp.Header.Revision, nil
}

// waitAdmitted returns once fewer than permits keys of the line qpfx
// created before rev remain. It reads them once, then counts their
// deletions in a watch of the line, so that a deletion wakes each waiter
// for one event, not for a read of the whole line; it reads again only
// when etcd compacted past what it watched.
func (a *Etcd) waitAdmitted(ctx context.Context, qpfx string, rev int64, permits int) error {
	for {
		n, at, err := a.before(ctx, qpfx, rev)
		if err != nil {
			return err
		}
		if n < permits {
			return nil
		}
		if err := a.awaitDeletionsBefore(ctx, qpfx, at+1, rev, n-permits+1); err != nil {
			return err
		}
	}
}

// awaitDeletionsBefore returns once the watch of the line qpfx from
// revision from on has seen need deletions of keys created before rev (no
// key created later counts: a deleted one that comes back is created
// anew), or when it cannot tell (etcd compacted past from, or a deletion
// without its previous key): the caller reads the line again.
func (a *Etcd) awaitDeletionsBefore(ctx context.Context, qpfx string, from, rev int64, need int) error {
	return a.awaitDeletion(ctx, "a permit", qpfx, from, func(prev *mvccpb.KeyValue) bool {
		if prev == nil {
			return true
		}
		if prev.CreateRevision < rev {
			need--
		}
		return need == 0
	}, clientv3.WithPrefix(), clientv3.WithFilterPut(), clientv3.WithPrevKV())
}

// permitsHeldError is the answer to a contender that was not admitted
// within its wait.
func permitsHeldError(semaphore string, permits int) error {
	return fmt.Errorf("%w: all %d permits are held", &LockedError{Resource: semaphore}, permits)
}

// checkPermits refuses what a semaphore acquisition cannot be.
func checkPermits(resource string, opts AcquireOptions) error {
	switch {
	case opts.Permits < 0 || opts.Permits > tokens.MaxPermits:
		return fmt.Errorf("%w: %d, want 1 to %d (0: an exclusive lock)", ErrBadPermits, opts.Permits, tokens.MaxPermits)
	case opts.Permits > 0 && opts.LockDelay > 0:
		return fmt.Errorf("%w: a semaphore has no lock-delay", ErrBadPermits)
	}
	// Every slot's name must be a resource name too: a slot whose lock key
	// could not be read back as one would look free to every contender.
	if opts.Permits > 0 {
		if err := tokens.CheckResource(tokens.PermitResource(resource, opts.Permits)); err != nil {
			return fmt.Errorf("%w: the name of its slot %d: %w", ErrBadPermits, opts.Permits, err)
		}
	}
	return nil
}

// semaphoreOf is the semaphore a lease's resource is a slot of, or the
// resource itself for a lock's lease.
func semaphoreOf(l Lease) string {
	if l.Token.Permit == 0 {
		return l.Resource
	}
	return strings.TrimSuffix(l.Resource, tokens.PermitResource("", l.Token.Permit))
}

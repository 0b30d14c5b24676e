package authority

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/fencegw/fencegw/tokens"
	"net/url"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/clip"
)

// Lease limits. etcd rounds TTLs to whole seconds and raises tiny ones to
// its own minimum; the granted TTL is reported back to the holder.
const (
	MinTTL  = 1 * time.Second
	MaxTTL  = time.Hour
	MaxWait = 5 * time.Minute
)

// cleanupTimeout bounds each attempt to revoke the lease of a failed
// acquisition; abandonedBackoff is the longest pause between attempts, and
// so about how long an abandoned waiter may hold its lock once etcd is back.
const (
	cleanupTimeout   = 5 * time.Second
	abandonedBackoff = 5 * time.Second
)

// Lease is a granted lock: the holder may write with Token until the etcd
// lease ID expires or is released. A semaphore's permit is a lock on one
// of its slots: Resource is the slot's (tokens.PermitResource) and
// Token.Permit the slot.
type Lease struct {
	ID       LeaseID
	Resource string
	Token    tokens.Token
	TTL      time.Duration // as granted by etcd, measured from the grant

	// signer is the key recorded as its token's signer (signers.go); ""
	// if that key was retired before the record was made.
	signer string
}

// LeaseID is an etcd lease ID; its text form is lower-case hex.
type LeaseID int64

func (id LeaseID) String() string { return strconv.FormatInt(int64(id), 16) }

// ParseLeaseID reads the text form String writes, and only that: one
// lease has one name, so "ABC", "0abc" and "+abc" are not aliases of "abc"
// in paths, logs or metrics.
func ParseLeaseID(s string) (LeaseID, error) {
	n, err := strconv.ParseInt(s, 16, 64)
	if err != nil || n <= 0 || LeaseID(n).String() != s {
		return 0, fmt.Errorf("%w: %q is not a lease id: a positive number in lower-case hex, without leading zeros", ErrBadLeaseID, clip.String(s, 48))
	}
	return LeaseID(n), nil
}

// lockKeyPrefix is the prefix under which every contender's key for
// resource lives; the holder is the key with the lowest create revision.
func lockKeyPrefix(resource string) string {
	return lockPrefix + url.PathEscape(resource) + "/"
}

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

// clientsPrefix indexes each lease under its owner, so that the leases of
// a client can be counted with one read.
const clientsPrefix = "/fencegw/clients/"

func clientKey(owner string, id LeaseID) string {
	return clientsPrefix + url.PathEscape(owner) + "/" + id.String()
}

// ownerKey records, attached to the lease itself, which client took it. It
// also marks the lease as fencegw's: the gateway renews and revokes no
// other etcd lease.
func ownerKey(id LeaseID) string { return ownerPrefix + id.String() }

// checkOwner reports ErrLeaseNotFound for a lease fencegw does not know
// (expired, released, or never its own) and ErrNotOwner for another
// client's lease. In the same read it returns the lease's lock-delay
// record, nil if it has none (lockdelay.go).
func (a *Etcd) checkOwner(ctx context.Context, id LeaseID, owner string) (*delayRecord, error) {
	resp, err := reads(named("owner", clientv3.OpGet(ownerKey(id))), named("delay", clientv3.OpGet(delayIndexKey(id)))).commit(ctx, a.cli)
	if err != nil {
		return nil, unavailable("read lease owner", err)
	}
	if err := ownerIs(resp.kvs("owner"), id, owner); err != nil {
		return nil, err
	}
	return delayOf(resp.kvs("delay")), nil
}

// markReleased checks that owner owns lease id and, in the same
// transaction, marks it as ending by release (markEnding's record, in
// the round trip the owner check takes anyway); it returns the lease's
// lock-delay record, if any.
func (a *Etcd) markReleased(ctx context.Context, id LeaseID, owner string) (*delayRecord, error) {
	b, _ := json.Marshal(ending{How: EndReleased}) // strings only: cannot fail
	resp, err := txn{
		ifs: []clientv3.Cmp{clientv3.Compare(clientv3.Value(ownerKey(id)), "=", owner)},
		then: []txnOp{
			named("ending", clientv3.OpPut(endingKey(id), string(b), clientv3.WithLease(clientv3.LeaseID(id)))),
			named("delay", clientv3.OpGet(delayIndexKey(id))),
		},
		els: []txnOp{named("owner", clientv3.OpGet(ownerKey(id)))},
	}.commit(ctx, a.cli)
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

// ownerIs checks the result of a read of lease id's owner key.
func ownerIs(kvs []*mvccpb.KeyValue, id LeaseID, owner string) error {
	switch {
	case len(kvs) == 0:
		return fmt.Errorf("lease %s: %w", id, ErrLeaseNotFound)
	case string(kvs[0].Value) != owner:
		return fmt.Errorf("lease %s: %w", id, ErrNotOwner)
	}
	return nil
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

// errOwnKeyGone ends a wait whose own lock key was deleted.
var errOwnKeyGone = fmt.Errorf("authority: the waiting lease expired or was revoked: %w", ErrLeaseNotFound)

// waitTurn waits until the waiter whose lock key is key (created at rev)
// is first in line, or its own key is gone: a waiter whose lease expires
// while it queues (the gateway paused, etcd's keepalives late) is told at
// once, not when the holder leaves.
func (a *Etcd) waitTurn(ctx context.Context, pfx, key string, rev int64) error {
	return a.whileKeyLives(ctx, key, rev, func(ctx context.Context) error {
		return a.waitPredecessors(ctx, pfx, rev-1)
	})
}

// whileKeyLives runs wait, cut short with errOwnKeyGone if key (created
// at rev) is deleted meanwhile.
func (a *Etcd) whileKeyLives(ctx context.Context, key string, rev int64, wait func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watching := make(chan struct{})
	go func() { // owned: ends with ctx, which ends when waitTurn returns
		defer close(watching)
		for wr := range a.cli.Watch(ctx, key, clientv3.WithRev(rev+1), clientv3.WithFilterPut()) {
			if len(wr.Events) > 0 {
				cancel(errOwnKeyGone)
				return
			}
		}
	}()
	err := wait(ctx)
	if cause := context.Cause(ctx); errors.Is(cause, errOwnKeyGone) {
		err = cause
	}
	cancel(nil)
	<-watching
	return err
}

// waitPredecessors returns once no key of pfx created at or before maxRev
// remains. Each round watches only the newest such key.
func (a *Etcd) waitPredecessors(ctx context.Context, pfx string, maxRev int64) error {
	opts := append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(maxRev))
	for {
		resp, err := a.cli.Get(ctx, pfx, opts...)
		if err != nil {
			return err
		}
		a.observe(resp.Header.Revision)
		if len(resp.Kvs) == 0 {
			return nil
		}
		if err := a.waitDelete(ctx, string(resp.Kvs[0].Key), resp.Header.Revision); err != nil {
			return err
		}
	}
}

// keepWaitingAlive renews lease id until ctx ends: a waiter's lease must
// outlive a wait longer than its TTL.
func (a *Etcd) keepWaitingAlive(ctx context.Context, id LeaseID) error {
	acks, err := a.cli.KeepAlive(ctx, clientv3.LeaseID(id))
	if err != nil {
		return unavailable("keep waiting lease alive", err)
	}
	go func() {
		for range acks { // closed when ctx ends
		}
	}()
	return nil
}

// waitDelete returns at the deletion of key from revision rev on.
func (a *Etcd) waitDelete(ctx context.Context, key string, rev int64) error {
	return a.awaitDeletion(ctx, "the lock", key, rev, anyDeletion)
}

// anyDeletion ends an awaitDeletion at the first deletion.
func anyDeletion(*mvccpb.KeyValue) bool { return true }

// awaitDeletion returns once enough, told of each deletion the watch of
// key (with opts) sees from revision rev on (the key as it was, when opts
// ask for it with clientv3.WithPrevKV), says so, or when etcd compacted
// past rev: the history since rev is gone, so nothing is reported missed
// and the caller reads again. waitingFor names what the caller waits for.
func (a *Etcd) awaitDeletion(ctx context.Context, waitingFor, key string, rev int64, enough func(prev *mvccpb.KeyValue) bool, opts ...clientv3.OpOption) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range a.cli.Watch(wctx, key, append(opts, clientv3.WithRev(rev))...) {
		if wr.CompactRevision != 0 {
			return nil
		}
		if err := wr.Err(); err != nil {
			return err
		}
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.DELETE && enough(ev.PrevKv) {
				return nil
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("authority: watch closed while waiting for " + waitingFor)
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

func leaseError(op string, err error) error {
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("%s: %w", op, ErrLeaseNotFound)
	}
	return unavailable(op, err)
}

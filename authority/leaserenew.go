package authority

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// KeepAlive renews owner's lease id once: its TTL from now, and its
// token signed again by the key that signs now, so that a holder that
// keeps its lease across a key rotation holds a token of the newest key.
// A lease that is gone yields ErrLeaseNotFound: the holder has lost the
// lock and must stop.
func (a *Etcd) KeepAlive(ctx context.Context, id LeaseID, owner string) (Renewal, error) {
	if err := a.Halted(); err != nil {
		return Renewal{}, err
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	ring, err := a.keyring(ctx)
	if err != nil {
		return Renewal{}, err
	}
	signer := ring.Signer()
	// The owner, its lock-delay record and what re-signing needs, at one
	// revision.
	ops := append([]txnOp{
		named("owner", clientv3.OpGet(ownerKey(id))),
		named("delay", clientv3.OpGet(delayIndexKey(id))),
		named("hold", clientv3.OpGet(holdKey(id))),
	}, resignOps(id, signer)...)
	resp, err := reads(ops...).commit(ctx, a.cli)
	if err != nil {
		return Renewal{}, unavailable("read lease owner", err)
	}
	if err := ownerIs(resp.kvs("owner"), id, owner); err != nil {
		return Renewal{}, err
	}
	now := a.now()
	if pastMaxHold(resp.kvs("hold"), now) {
		// Cut off: the next holder need not wait out the TTL either.
		_ = a.markEnding(ctx, id, ending{How: EndRevoked, Actor: GatewayActor, Reason: "held past max_hold"}) // best effort: unmarked, it reads as expired
		if _, err := a.cli.Revoke(ctx, clientv3.LeaseID(id)); err != nil {
			return Renewal{}, leaseError("revoke a lease held too long", err)
		}
		return Renewal{}, fmt.Errorf("lease %s: %w: revoked (%w)", id, ErrHeldTooLong, ErrLeaseNotFound)
	}
	ka, err := a.cli.KeepAliveOnce(ctx, clientv3.LeaseID(id))
	if err != nil {
		return Renewal{}, leaseError("keep lease alive", err)
	}
	a.observe(ka.Revision)
	// For the reaper: renewed through us, not only by an election.
	if _, err := a.cli.Put(ctx, renewedKey(id), strconv.FormatInt(now.UnixMilli(), 10), clientv3.WithLease(clientv3.LeaseID(id))); err != nil {
		return Renewal{}, unavailable("record the renewal", err)
	}
	// After the holder's: the delay lease must end after it, by the delay.
	if err := a.renewDelay(ctx, id, delayOf(resp.kvs("delay"))); err != nil {
		return Renewal{}, err
	}
	return Renewal{TTL: time.Duration(ka.TTL) * time.Second, Token: resign(resp, ring, signer, owner)}, nil
}

// Renewal is a lease renewed.
type Renewal struct {
	TTL time.Duration // from the renewal
	// Token is the lease's token signed by the key that signs now; zero
	// if it cannot be signed again (see resign), and then the token the
	// holder has stays its token.
	Token tokens.Token
}

// resignOps are the reads, for a keepalive's transaction, that resign
// needs: the lease's token record, the epoch key, and whether signer is
// in service.
func resignOps(id LeaseID, signer string) []txnOp {
	return []txnOp{
		named("token record", clientv3.OpGet(leaseTokenKey(id))),
		named("epoch", clientv3.OpGet(epochKey)),
		named(signerRead, clientv3.OpGet(keysPrefix+signer, clientv3.WithCountOnly())),
	}
}

// resign signs the token of owner's lease again with signer, from the
// results of resignOps in r. It does not when the lease
// has no record (granted before records were kept), when signer is older
// than the key that signed its grant (this process's keys are behind, or
// its clock: the record would no longer bound the keys the holder's
// tokens carry) or is not in service, or when the epoch changed since the
// grant: the token's epoch is then not the current one, and no signature
// makes it current.
func resign(r txnResult, ring *tokens.Keyring, signer, owner string) tokens.Token {
	rec := r.kvs("token record")
	if len(rec) == 0 || !signerInService(r) {
		return tokens.Token{}
	}
	var lt leaseToken
	if json.Unmarshal(rec[0].Value, &lt) != nil || signer < lt.Key {
		return tokens.Token{}
	}
	revision := rec[0].CreateRevision
	epochKVs := r.kvs("epoch")
	if len(epochKVs) > 0 && epochKVs[0].ModRevision >= revision {
		return tokens.Token{}
	}
	epoch, err := epochOf(epochKVs)
	if err != nil {
		return tokens.Token{}
	}
	tok, _ := ring.SignWith(signer, tokens.Token{Epoch: epoch, Revision: revision, Permit: lt.Permit}, lt.Resource, owner)
	return tok
}

// renewLease renews lease id once, so that it has its whole TTL from
// now, and returns that TTL in seconds; a lease that ended is
// ErrLeaseNotFound.
func (a *Etcd) renewLease(ctx context.Context, id LeaseID) (int64, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := a.cli.KeepAliveOnce(ctx, clientv3.LeaseID(id))
	if err != nil {
		return 0, leaseError("refresh lease", err)
	}
	return resp.TTL, nil
}

// renewing runs record while it renews lease id (renewLease), if renew,
// in the same round trip: a lease granted its lock after a wait gets its
// whole TTL from its grant, and the records of the grant, compared
// against its key, are not made for a lease that ran out meanwhile.
func (a *Etcd) renewing(ctx context.Context, id LeaseID, renew bool, record func() error) error {
	if !renew {
		return record()
	}
	var renewed error
	var wg sync.WaitGroup
	wg.Go(func() { _, renewed = a.renewLease(ctx, id) })
	err := record()
	wg.Wait()
	return cmp.Or(err, renewed)
}

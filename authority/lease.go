package authority

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/tokens"
)

// A lease is the etcd lease an acquisition is granted under, as etcd's
// concurrency.Session is the lease its Mutex locks with: every key
// fencegw writes for it is attached to it, so that all of them go when it
// is released, revoked or expires. This file says what a lease is and
// whose it is; its renewal (leaserenew.go), release (leaserelease.go),
// end (leaseend.go), hold records and reaper (holdbound.go) and signing
// key (signers.go) have theirs. The lock a lease holds is lock.go's, and
// Acquire (acquire.go) takes the one with the other.

// Lease limits. etcd rounds TTLs to whole seconds and raises tiny ones to
// its own minimum; the granted TTL is reported back to the holder.
const (
	MinTTL  = 1 * time.Second
	MaxTTL  = time.Hour
	MaxWait = 5 * time.Minute
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

// leaseOps are a lease's own records, put with its first key in line:
// whose it is (ownerKey) and its entry in the owner's index (clientKey).
func leaseOps(id LeaseID, owner string) []txnOp {
	with := clientv3.WithLease(clientv3.LeaseID(id))
	return []txnOp{
		named("owner", clientv3.OpPut(ownerKey(id), owner, with)),
		named("client index", clientv3.OpPut(clientKey(owner, id), "", with)),
	}
}

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

func leaseError(op string, err error) error {
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("%s: %w", op, ErrLeaseNotFound)
	}
	return unavailable(op, err)
}

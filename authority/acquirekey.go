package authority

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// An acquisition with an idempotency key (AcquireOptions.Key) is one
// acquisition however often it is sent. When the answer to a grant is lost
// on the way (a timeout, a reset connection), the retry must not queue a
// second lease behind the first: that one may be granted and hold the lock
// for its whole TTL with nobody using it. So the first attempt records its
// lease under the owner's key, attached to the lease (it goes with it),
// and a retry with the same key joins it: it gets the same lease and token
// once the lease holds the lock, waiting for that if it still waits; it
// starts afresh only when that lease is gone (released, expired, or
// abandoned by an attempt that failed).
const acquisitionsPrefix = "/fencegw/acquisitions/"

// ErrKeyReused is an acquisition key sent again for another resource or
// TTL: the same key, another request.
var ErrKeyReused = errors.New("authority: acquisition key reused for another request")

func acquisitionKey(owner, key string) string {
	return acquisitionsPrefix + url.PathEscape(owner) + "/" + url.PathEscape(key)
}

// acquisition is what the record holds. A record created granted, in
// the transaction that granted its lock (lockgrant.go), has no Revision:
// it is the record's own create revision, the token's.
type acquisition struct {
	Lease    string `json:"lease"`
	Resource string `json:"resource"`
	TTL      int64  `json:"ttl"`
	Granted  bool   `json:"granted"`
	Epoch    int64  `json:"epoch,omitempty"`
	Revision int64  `json:"revision,omitempty"`
	Permit   int    `json:"permit,omitempty"` // a semaphore's slot; Resource is the semaphore
	Signer   string `json:"signer,omitempty"`
}

// earlierAttempt is an acquisition whose key an earlier attempt recorded:
// this one is its retry, and joins its lease (join) instead of taking
// one of its own.
type earlierAttempt struct{ rec acquisition }

func (e *earlierAttempt) Error() string {
	return "authority: an earlier attempt with this acquisition key has lease " + e.rec.Lease
}

// lookUpAcquisition reads the record of opts.Key: *earlierAttempt if an
// attempt recorded it.
func (a *Etcd) lookUpAcquisition(ctx context.Context, opts AcquireOptions) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := a.cli.Get(ctx, acquisitionKey(opts.Owner, opts.Key))
	if err != nil {
		return unavailable("read the acquisition", err)
	}
	// A grant this replica answers, though another made it, is as new
	// as this replica knows (HolderView answers only up to it).
	a.observe(resp.Header.Revision)
	if len(resp.Kvs) == 0 {
		return nil
	}
	rec, err := parseAcquisition(resp.Kvs[0])
	if err != nil {
		return err
	}
	return &earlierAttempt{rec: rec}
}

// claim is a transaction that records lease id, waiting in line, as the
// acquisition of opts.Key, with ops, unless another attempt did first:
// then it reads that attempt's record (earlierIn) and puts nothing.
func claim(resource string, id LeaseID, opts AcquireOptions, ops ...txnOp) txn {
	key := acquisitionKey(opts.Owner, opts.Key)
	return txn{
		ifs:  []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
		then: append(ops, claimOp(resource, id, opts)),
		els:  []txnOp{named("other attempt", clientv3.OpGet(key))},
	}
}

// claimOp records lease id, not granted yet, as the acquisition of
// opts.Key: a retry waits for it to be granted (join).
func claimOp(resource string, id LeaseID, opts AcquireOptions) txnOp {
	b, _ := json.Marshal(acquisition{Lease: id.String(), Resource: resource, TTL: int64(opts.TTL / time.Second)})
	return named("acquisition", clientv3.OpPut(acquisitionKey(opts.Owner, opts.Key), string(b), clientv3.WithLease(clientv3.LeaseID(id))))
}

// earlierIn is the *earlierAttempt whose record the claim r found.
func earlierIn(r txnResult) error {
	kvs := r.kvs("other attempt")
	if len(kvs) == 0 {
		return fmt.Errorf("%w: the record of this acquisition key went as it was read", ErrUnavailable)
	}
	other, err := parseAcquisition(kvs[0])
	if err != nil {
		return err
	}
	return &earlierAttempt{rec: other}
}

// grantedAcquisitionOp records that lease l's acquisition holds its lock,
// with what a retry needs to answer as the first attempt did, for the
// transaction that records the grant. A token of revision 0 is the one
// that transaction issues: the record, created in it, has its revision.
func grantedAcquisitionOp(l Lease, opts AcquireOptions) txnOp {
	rec := acquisition{Lease: l.ID.String(), Resource: semaphoreOf(l), TTL: int64(opts.TTL / time.Second), Granted: true,
		Epoch: l.Token.Epoch, Revision: l.Token.Revision, Permit: l.Token.Permit, Signer: l.signer}
	b, _ := json.Marshal(rec)
	return named("acquisition", clientv3.OpPut(acquisitionKey(opts.Owner, opts.Key), string(b), clientv3.WithLease(clientv3.LeaseID(l.ID))))
}

func parseAcquisition(kv *mvccpb.KeyValue) (acquisition, error) {
	var rec acquisition
	if err := json.Unmarshal(kv.Value, &rec); err != nil || rec.Lease == "" {
		return acquisition{}, fmt.Errorf("authority: an acquisition record that fencegw did not write: %q", kv.Value)
	}
	if rec.Granted && rec.Revision == 0 {
		rec.Revision = kv.CreateRevision
	}
	return rec, nil
}

// join waits for the acquisition rec another attempt made, as a retry of
// it, and returns its lease once it holds the lock; ok false when that
// lease is gone, and the caller may start afresh. ctx and wait bound it.
func (a *Etcd) join(ctx context.Context, resource string, rec acquisition, opts AcquireOptions) (Lease, bool, error) {
	if rec.Resource != resource || rec.TTL != int64(opts.TTL/time.Second) {
		return Lease{}, false, fmt.Errorf("%w: it was first sent for %s with a ttl of %ds", ErrKeyReused, rec.Resource, rec.TTL)
	}
	key := acquisitionKey(opts.Owner, opts.Key)
	wctx, cancel := context.WithTimeout(ctx, opts.Wait)
	defer cancel()
	for {
		if rec.Granted {
			return a.joined(ctx, resource, rec, opts)
		}
		resp, err := a.cli.Get(wctx, key)
		switch {
		case err != nil && wctx.Err() != nil && ctx.Err() == nil:
			return Lease{}, false, a.lockedError(ctx, resource) // the first attempt still waits
		case err != nil:
			return Lease{}, false, unavailable("read the acquisition", err)
		case len(resp.Kvs) == 0:
			return Lease{}, false, nil // gone: start afresh
		}
		a.observe(resp.Header.Revision)
		if rec, err = parseAcquisition(resp.Kvs[0]); err != nil {
			return Lease{}, false, err
		}
		if rec.Granted {
			continue
		}
		// Wait for the first attempt's next word: granted, or gone.
		wch := a.cli.Watch(clientv3.WithRequireLeader(wctx), key, clientv3.WithRev(resp.Header.Revision+1))
		select {
		case <-wctx.Done():
		case <-wch:
		}
	}
}

// joined answers a retry with the lease its first attempt was granted:
// the same token, signed by the key that signed it, and the TTL left.
func (a *Etcd) joined(ctx context.Context, resource string, rec acquisition, opts AcquireOptions) (Lease, bool, error) {
	id, err := ParseLeaseID(rec.Lease)
	if err != nil {
		return Lease{}, false, fmt.Errorf("authority: acquisition record: %w", err)
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	ttl, err := a.cli.TimeToLive(ctx, clientv3.LeaseID(id))
	switch {
	case err != nil:
		return Lease{}, false, leaseError("read the lease's TTL", err)
	case ttl.TTL <= 0:
		return Lease{}, false, nil // it ended: start afresh
	}
	ring, err := a.keyring(ctx)
	if err != nil {
		return Lease{}, false, err
	}
	l := Lease{ID: id, Resource: resource, Token: tokens.Token{Epoch: rec.Epoch, Revision: rec.Revision, Permit: rec.Permit}, TTL: time.Duration(ttl.TTL) * time.Second, signer: rec.Signer}
	if rec.Permit > 0 {
		l.Resource = tokens.PermitResource(resource, rec.Permit)
	}
	signed, ok := ring.SignWith(rec.Signer, l.Token, l.Resource, opts.Owner)
	if !ok {
		// Its key retired since (forced): the token cannot be given
		// again, and a new lease must be taken.
		return Lease{}, false, fmt.Errorf("%w: the lease of this acquisition was signed by a key since retired: release it, or let it expire, and acquire again", ErrKeyReused)
	}
	l.Token = signed
	return l, true, nil
}

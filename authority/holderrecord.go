package authority

import (
	"encoding/json"
	"net/url"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// What watchers follow (watch.go) lives apart from the lock keys, under
// one prefix per resource, so that one etcd watch of a range sees a
// resource's (or a prefix's) every grant, value change and end in
// revision order:
//   - /fencegw/held/<escaped resource>/holder: the holder's record (lease,
//     token, value), attached to the holder's lease. It is written when
//     the lock is granted, not when a key becomes first in line: a waiter
//     first in line may still wait out a lock-delay, or give up. etcd
//     deletes it with the lease, whatever ended it.
//   - /fencegw/held/<escaped resource>/transitions: written at every
//     grant, in the same transaction as the record: its etcd version
//     counts the grants (Kubernetes' leaseTransitions). Deleted only by
//     the janitor, once the lock is idle (transitionsprune.go), so the
//     count is of grants since then.
//
// A deleted record does not say why the lease ended. A release or a
// revocation first marks the lease (endingKey, attached to it, so it goes
// with the lease); a watcher reads the mark as it was just before the
// deletion, and a lease that ended unmarked expired.
const (
	heldPrefix   = "/fencegw/held/"
	endingPrefix = "/fencegw/endings/"
)

const (
	holderRecordName = "holder"
	transitionsName  = "transitions"
)

func heldKeyPrefix(resource string) string { return heldPrefix + url.PathEscape(resource) + "/" }

func holderRecordKey(resource string) string { return heldKeyPrefix(resource) + holderRecordName }

func transitionsKey(resource string) string { return heldKeyPrefix(resource) + transitionsName }

func endingKey(id LeaseID) string { return endingPrefix + id.String() }

// holderRecord is the value of a resource's holder record. A record
// created in the transaction that put its holder's key in line and
// granted it (lockgrant.go) names its token's epoch only: the token's
// revision is that transaction's, which is the record's own create
// revision (a value change keeps it). One created after a wait names its
// whole token, as every record did before; both are read.
type holderRecord struct {
	Lease string `json:"lease"`           // hex
	Token string `json:"token,omitempty"` // unsigned: the record is no capability
	Epoch int64  `json:"epoch,omitempty"` // with no token: its revision is the record's create revision
	Value string `json:"value"`
}

// token is the token of the holder that record kv names.
func (r holderRecord) token(kv *mvccpb.KeyValue) tokens.Token {
	if r.Token == "" {
		return tokens.Token{Epoch: r.Epoch, Revision: kv.CreateRevision}
	}
	tok, _ := tokens.Parse(r.Token)
	return tok
}

// holderOps record lease l, granted with value, as its resource's holder.
// A token of revision 0 is the one the transaction issues.
func holderOps(l Lease, value string) []txnOp {
	rec := holderRecord{Lease: l.ID.String(), Value: value}
	if l.Token.Revision == 0 {
		rec.Epoch = l.Token.Epoch
	} else {
		// E:R, a permit's too: the record is its slot's, which its
		// resource names, as observation and the fence show it.
		rec.Token = tokens.Token{Epoch: l.Token.Epoch, Revision: l.Token.Revision}.String()
	}
	b, _ := json.Marshal(rec) // strings and a number: cannot fail
	return []txnOp{
		named("transitions", clientv3.OpPut(transitionsKey(l.Resource), l.ID.String())),
		named("holder record", clientv3.OpPut(holderRecordKey(l.Resource), string(b), clientv3.WithLease(clientv3.LeaseID(l.ID)))),
	}
}

// Transitions counts the grants this process recorded, each a lock's
// transition to a new holder (a retry that joins its first attempt's
// lease is none): summed over replicas, every lock's.
func (a *Etcd) Transitions() int64 { return a.transitions.Load() }

// Ending is how a lease ended, as watchers are told.
type Ending string

// Endings. EndingUnknown is a lease whose end etcd has compacted away.
const (
	EndingReleased Ending = "released"
	EndingExpired  Ending = "expired"
	EndingRevoked  Ending = "revoked"
	EndingUnknown  Ending = "ended"
)

// heldKeyParts splits a key under heldPrefix into its resource and what
// it is (holderRecordName or transitionsName); ok is false for any other
// key.
func heldKeyParts(key string) (resource, name string, ok bool) {
	escaped, name, found := strings.Cut(strings.TrimPrefix(key, heldPrefix), "/")
	if !found || (name != holderRecordName && name != transitionsName) {
		return "", "", false
	}
	resource, err := url.PathUnescape(escaped)
	if err != nil || url.PathEscape(resource) != escaped || tokens.CheckResource(resource) != nil {
		return "", "", false
	}
	return resource, name, true
}

// parseHolderRecord reads a holder record; ok is false for one fencegw
// did not write.
func parseHolderRecord(b []byte) (rec holderRecord, id LeaseID, ok bool) {
	if json.Unmarshal(b, &rec) != nil || (rec.Token == "" && rec.Epoch == 0) {
		return holderRecord{}, 0, false
	}
	id, err := ParseLeaseID(rec.Lease)
	return rec, id, err == nil
}

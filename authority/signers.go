package authority

import (
	"context"
	"encoding/json"
	"errors"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Which key signed a lease's token is recorded with the lease, attached
// to it so that the record ends with the lease: `fencegw keys retire`
// keeps every key a live lease may hold a token of (retire.go), and a
// keepalive can sign the lease's token again under the newest key.
//
// The record names the key that signed the token the lease was granted
// with. Keys only get newer, and a keepalive signs only with a key at
// least as new, so every token of the lease carries a key no older than
// the recorded one: retire keeps that key and every newer one while the
// lease lives.
const (
	// signedByPrefix indexes a lease under its key:
	// /fencegw/signed-by/<key id>/<lease id> holds the resource. Retire
	// compares the indexes of the keys it retires, and only those: grants
	// under newer keys do not make it start again.
	signedByPrefix = "/fencegw/signed-by/"
	// leaseTokenPrefix holds, per lease, what a keepalive needs to sign its
	// token again (leaseToken). The transaction that creates the lock key
	// creates it too, so its create revision is the token's revision.
	leaseTokenPrefix = "/fencegw/lease-tokens/"
)

func signedByKey(keyID string, id LeaseID) string { return signedByPrefix + keyID + "/" + id.String() }

func leaseTokenKey(id LeaseID) string { return leaseTokenPrefix + id.String() }

// leaseToken is a lease's record of its token.
type leaseToken struct {
	Resource string `json:"resource"`
	Permit   int    `json:"permit,omitempty"` // a semaphore's slot; Resource is the slot's
	Key      string `json:"key"`              // the ID of the key that signed the token granted
}

// errKeysChanged ends a grant whose signing key was retired twice over
// while it was being recorded: etcd is answering, but the keys move.
var errKeysChanged = errors.New("the signing keys changed while the grant was recorded; try again")

// signerOps are the operations, for the transaction that creates a
// lease's lock key, that record keyID as the signer of its token, and a
// read of whether keyID is still in service at that revision: if it is,
// any retirement of it comes later and finds the record.
func signerOps(resource string, permit int, keyID string, id LeaseID) []txnOp {
	lease := clientv3.WithLease(clientv3.LeaseID(id))
	return []txnOp{
		named("signed by", clientv3.OpPut(signedByKey(keyID, id), resource, lease)),
		named("token record", clientv3.OpPut(leaseTokenKey(id), leaseTokenValue(resource, permit, keyID), lease)),
		named(signerRead, clientv3.OpGet(keysPrefix+keyID, clientv3.WithCountOnly())),
	}
}

// signerRead names the read, in signerOps and resignOps, of whether the
// signing key is in service.
const signerRead = "signer in service"

func leaseTokenValue(resource string, permit int, keyID string) string {
	b, _ := json.Marshal(leaseToken{Resource: resource, Permit: permit, Key: keyID}) // strings and a number: cannot fail
	return string(b)
}

// signerInService reads signerOps's read of the signing key.
func signerInService(r txnResult) bool { return r.count(signerRead) > 0 }

// recordNewSigner runs when the key this process meant to sign a grant
// with (old) was retired before the grant was recorded: this process's
// keys are out of date. It reloads them and records the key that signs
// now instead, if that one is still in service.
func (a *Etcd) recordNewSigner(ctx context.Context, resource string, permit int, id LeaseID, old string) (string, error) {
	ring, err := a.ReloadKeys(ctx)
	if err != nil {
		return "", err
	}
	signer := ring.Signer()
	ctx, cancel := bounded(ctx)
	defer cancel()
	lease := clientv3.WithLease(clientv3.LeaseID(id))
	resp, err := txn{
		ifs: []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(keysPrefix+signer), ">", 0)},
		then: []txnOp{
			named("old signer", clientv3.OpDelete(signedByKey(old, id))),
			named("signed by", clientv3.OpPut(signedByKey(signer, id), resource, lease)),
			named("token record", clientv3.OpPut(leaseTokenKey(id), leaseTokenValue(resource, permit, signer), lease)),
		},
	}.commit(ctx, a.cli)
	switch {
	case err != nil:
		return "", unavailable("record the signing key", err)
	case !resp.Succeeded:
		return "", unavailable("record the signing key", errKeysChanged)
	}
	return signer, nil
}

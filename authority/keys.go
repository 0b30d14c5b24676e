package authority

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/kek"
)

// keysPrefix holds the keys that sign tokens, one per key ID (a zero-padded
// sequence number: the highest is the newest, and it signs). They live in
// etcd because etcd is already the authority every replica shares: a
// rotation reaches every replica by itself. They rest sealed under the
// gateways' key-encryption key (keyseal.go): reading them, or a snapshot
// of etcd, signs nothing.
const keysPrefix = "/fencegw/token-keys/"

// retiredKeysPrefix holds the keys `fencegw keys retire` took out of
// service. They never sign and never make a token valid: they are kept
// only so that a token one of them signed is refused as what it is, a
// token of a retired key (403 token-retired), not as a forgery.
const retiredKeysPrefix = "/fencegw/retired-token-keys/"

// keyIDWidth makes key IDs sort as numbers.
const keyIDWidth = 20

// KeyInfo describes a signing key without its bytes, which never leave
// the authority.
type KeyInfo struct {
	ID        string    `json:"id"`
	Created   time.Time `json:"created,omitzero"`    // zero for a key made before fencegw recorded it
	Revision  int64     `json:"revision"`            // etcd's revision when the key was created
	SignAfter time.Time `json:"sign_after,omitzero"` // zero: signs from creation
	Signing   bool      `json:"signing"`             // new tokens carry its signature
	RetiredAt time.Time `json:"retired_at,omitzero"` // set for a retired key
	SealedBy  string    `json:"sealed_by"`           // the ID of the KEK it is sealed under; "": stored in clear
}

// storedKey is a signing key as etcd holds it: 32 random bytes, sealed.
type storedKey struct {
	Sealed    *kek.Sealed `json:"sealed,omitempty"`
	Secret    string      `json:"secret,omitempty"` // base64, in clear: a key written before keys were sealed
	CreatedAt time.Time   `json:"created_at,omitzero"`
	SignAfter time.Time   `json:"sign_after"`
	RetiredAt time.Time   `json:"retired_at,omitzero"`
}

// addKey creates key number n with 32 random bytes, sealed under the
// newest KEK, signing from signAfter on, unless it exists.
func (a *Etcd) addKey(ctx context.Context, n int64, signAfter time.Time) (string, error) {
	ring, err := a.kekRing()
	if err != nil {
		return "", err
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return "", err
	}
	id := fmt.Sprintf("%0*d", keyIDWidth, n)
	value, err := sealKey(ring, id, secret, storedKey{CreatedAt: time.Now().UTC(), SignAfter: signAfter.UTC()})
	if err != nil {
		return "", err
	}
	key := keysPrefix + id
	_, err = txn{
		ifs:  []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
		then: []txnOp{named("key", clientv3.OpPut(key, string(value)))},
	}.commit(ctx, a.cli)
	if err != nil {
		return "", unavailable("create a signing key", err)
	}
	return id, nil
}

// DefaultSignAfter is how long a rotated key waits before it signs: every
// replica reloads its keys at each authority check (every 2 s by default),
// so by then all of them verify its signatures.
const DefaultSignAfter = 10 * time.Second

// RotateKey adds a new signing key that signs from signAfter from now on;
// until then, and until they are retired, the older keys' tokens stay
// valid. It returns the new key's ID.
func (a *Etcd) RotateKey(ctx context.Context, signAfter time.Duration) (string, error) {
	if _, err := a.keyring(ctx); err != nil { // a new cluster's first key
		return "", err
	}
	infos, err := a.Keys(ctx)
	if err != nil {
		return "", err
	}
	if len(infos) == 0 {
		return "", unavailable("rotate signing keys", errors.New("the first key was created, yet none is listed"))
	}
	// Retire never takes the newest key: the next number follows it.
	id, err := a.addKey(ctx, keyNumber(infos[0].ID)+1, time.Now().Add(signAfter))
	if err != nil {
		return "", err
	}
	_, err = a.ReloadKeys(ctx)
	return id, err
}

// Keys lists the signing keys in service, newest first, without their
// bytes. It writes nothing: on a cluster no gateway has signed with yet,
// the list is empty.
func (a *Etcd) Keys(ctx context.Context) ([]KeyInfo, error) {
	active, _, err := a.listKeys(ctx)
	return active, err
}

// RetiredKeys lists the retired keys, newest first, without their bytes.
func (a *Etcd) RetiredKeys(ctx context.Context) ([]KeyInfo, error) {
	_, retired, err := a.listKeys(ctx)
	return retired, err
}

func (a *Etcd) listKeys(ctx context.Context) (active, retired []KeyInfo, err error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	act, ret, err := a.readKeyKVs(ctx)
	if err != nil {
		return nil, nil, err
	}
	return keyInfos(act, keysPrefix, time.Now()), keyInfos(ret, retiredKeysPrefix, time.Time{}), nil
}

// keyInfos describes the keys kvs, newest first; for the keys in service
// (now not zero), it marks the one that signs at now as Keyring.Sign
// chooses it.
func keyInfos(kvs []*mvccpb.KeyValue, prefix string, now time.Time) []KeyInfo {
	infos := make([]KeyInfo, len(kvs))
	signer := len(kvs) - 1
	for i, kv := range kvs {
		var stored storedKey
		_ = json.Unmarshal(kv.Value, &stored) // a bad one fails ReloadKeys, with its name
		infos[i] = KeyInfo{ID: strings.TrimPrefix(string(kv.Key), prefix), Created: stored.CreatedAt, Revision: kv.CreateRevision, SignAfter: stored.SignAfter, RetiredAt: stored.RetiredAt}
		if stored.Sealed != nil {
			infos[i].SealedBy = stored.Sealed.KEK
		}
		if !now.Before(stored.SignAfter) && signer > i {
			signer = i
		}
	}
	if len(infos) > 0 && !now.IsZero() {
		infos[signer].Signing = true
	}
	return infos
}

package authority

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// keysPrefix holds the keys that sign tokens, one per key ID (a zero-padded
// sequence number: the highest is the newest, and it signs). They live in
// etcd because etcd is already the authority every replica shares: no
// secret to hand out, and a rotation reaches every replica by itself.
// Anyone who can read them can mint tokens, as anyone who can write etcd
// can mint lock keys: protect etcd (TLS, authentication).
const keysPrefix = "/fencegw/token-keys/"

// keyIDWidth makes key IDs sort as numbers.
const keyIDWidth = 20

// KeyInfo describes a signing key without its bytes, which never leave
// the authority.
type KeyInfo struct {
	ID        string    `json:"id"`
	Revision  int64     `json:"revision"`            // etcd's revision when the key was created
	SignAfter time.Time `json:"sign_after,omitzero"` // zero: signs from creation
	Signing   bool      `json:"signing"`             // new tokens carry its signature
}

// keyReloadEvery bounds the reloads a signature that no known key verifies
// can cause: forged tokens must not buy an etcd read each.
const keyReloadEvery = 250 * time.Millisecond

// keyring returns the signing keys, loading them (and creating the first
// one on a new cluster) on first use.
func (a *Etcd) keyring(ctx context.Context) (*tokens.Keyring, error) {
	if k := a.keys.Load(); k != nil {
		return k, nil
	}
	return a.ReloadKeys(ctx)
}

// ReloadKeys reads the signing keys from etcd now, creating the first key
// if there is none. The guard calls it on each check, and a signature no
// known key verifies makes it run at once (at most every 250 ms), so a
// rotation reaches every replica before tokens signed with the new key
// reach it, or on their first sight.
func (a *Etcd) ReloadKeys(ctx context.Context) (*tokens.Keyring, error) {
	a.keysMu.Lock()
	defer a.keysMu.Unlock()
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := a.cli.Get(ctx, keysPrefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
	if err != nil {
		return nil, unavailable("read signing keys", err)
	}
	if len(resp.Kvs) == 0 {
		if _, err := a.addKey(ctx, 1, time.Time{}); err != nil {
			return nil, err
		}
		if resp, err = a.cli.Get(ctx, keysPrefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend)); err != nil {
			return nil, unavailable("read signing keys", err)
		}
	}
	keys := make([]tokens.Key, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var stored storedKey
		err := json.Unmarshal(kv.Value, &stored)
		key := tokens.Key{SignAfter: stored.SignAfter}
		if err == nil {
			key.Secret, err = base64.StdEncoding.DecodeString(stored.Secret)
		}
		if err != nil || len(key.Secret) < tokens.MinKeyLen {
			return nil, fmt.Errorf("authority: etcd key %s does not hold a signing key", kv.Key)
		}
		keys = append(keys, key)
	}
	ring, err := tokens.NewKeyring(keys...)
	if err != nil {
		return nil, err
	}
	a.keys.Store(ring)
	a.keysLoaded.Store(time.Now().UnixNano())
	return ring, nil
}

// reloadKeysSoon reloads the keys unless that happened less than
// keyReloadEvery ago, and reports whether it did.
func (a *Etcd) reloadKeysSoon(ctx context.Context) bool {
	if time.Now().UnixNano()-a.keysLoaded.Load() < int64(keyReloadEvery) {
		return false
	}
	_, err := a.ReloadKeys(ctx)
	return err == nil
}

// storedKey is a signing key as etcd holds it.
type storedKey struct {
	Secret    string    `json:"secret"` // base64, 32 random bytes
	SignAfter time.Time `json:"sign_after"`
}

// addKey creates key number n with 32 random bytes, signing from
// signAfter on, unless it exists.
func (a *Etcd) addKey(ctx context.Context, n int64, signAfter time.Time) (string, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return "", err
	}
	value, err := json.Marshal(storedKey{Secret: base64.StdEncoding.EncodeToString(secret), SignAfter: signAfter.UTC()})
	if err != nil {
		return "", err
	}
	id := fmt.Sprintf("%0*d", keyIDWidth, n)
	key := keysPrefix + id
	_, err = a.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value))).
		Commit()
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
	infos, err := a.Keys(ctx)
	if err != nil {
		return "", err
	}
	n := int64(1)
	if len(infos) > 0 {
		last, _ := strconv.ParseInt(strings.TrimLeft(infos[0].ID, "0"), 10, 64)
		n = last + 1
	}
	id, err := a.addKey(ctx, n, time.Now().Add(signAfter))
	if err != nil {
		return "", err
	}
	_, err = a.ReloadKeys(ctx)
	return id, err
}

// RetireKeys deletes every signing key but the newest keep: tokens signed
// by them are refused from then on. Retire only after every lease granted
// before the rotation has ended (the longest TTL, plus the writes in
// flight). It returns the IDs it deleted.
func (a *Etcd) RetireKeys(ctx context.Context, keep int) ([]string, error) {
	if keep < 1 {
		return nil, fmt.Errorf("authority: keep at least one signing key")
	}
	infos, err := a.Keys(ctx)
	if err != nil {
		return nil, err
	}
	var retired []string
	for _, k := range infos[min(keep, len(infos)):] {
		if _, err := a.cli.Delete(ctx, keysPrefix+k.ID); err != nil {
			return retired, unavailable("retire a signing key", err)
		}
		retired = append(retired, k.ID)
	}
	_, err = a.ReloadKeys(ctx)
	return retired, err
}

// Keys lists the signing keys, newest first, without their bytes; on a
// new cluster it creates the first.
func (a *Etcd) Keys(ctx context.Context) ([]KeyInfo, error) {
	if _, err := a.keyring(ctx); err != nil {
		return nil, err
	}
	resp, err := a.cli.Get(ctx, keysPrefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
	if err != nil {
		return nil, unavailable("list signing keys", err)
	}
	infos := make([]KeyInfo, len(resp.Kvs))
	now, signer := time.Now(), len(resp.Kvs)-1
	for i, kv := range resp.Kvs {
		var stored storedKey
		_ = json.Unmarshal(kv.Value, &stored) // a bad one fails ReloadKeys, with its name
		infos[i] = KeyInfo{ID: strings.TrimPrefix(string(kv.Key), keysPrefix), Revision: kv.CreateRevision, SignAfter: stored.SignAfter}
		if !now.Before(stored.SignAfter) && signer > i {
			signer = i
		}
	}
	if len(infos) > 0 {
		infos[signer].Signing = true
	}
	return infos, nil
}

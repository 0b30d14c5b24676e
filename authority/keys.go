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

	"go.etcd.io/etcd/api/v3/mvccpb"
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
	Revision  int64     `json:"revision"`            // etcd's revision when the key was created
	SignAfter time.Time `json:"sign_after,omitzero"` // zero: signs from creation
	Signing   bool      `json:"signing"`             // new tokens carry its signature
	RetiredAt time.Time `json:"retired_at,omitzero"` // set for a retired key
}

// keySet is what a process knows of the signing keys.
type keySet struct {
	ring    *tokens.Keyring // the keys in service: the newest whose time has come signs, all verify
	retired *tokens.Keyring // nil if none: only names a refusal, never accepts
}

// retiredSigned reports whether one of the retired keys signed tok for
// resource and client.
func (s *keySet) retiredSigned(tok tokens.Token, resource, client string) bool {
	return s.retired != nil && s.retired.Verify(tok, resource, client)
}

// keyReloadEvery bounds the reloads a signature that no known key verifies
// can cause (keysReadSince): forged tokens must not buy an etcd read each.
const keyReloadEvery = 250 * time.Millisecond

// keyring returns the signing keys in service, loading them (and creating
// the first one on a new cluster) on first use.
func (a *Etcd) keyring(ctx context.Context) (*tokens.Keyring, error) {
	set, err := a.keySet(ctx)
	if err != nil {
		return nil, err
	}
	return set.ring, nil
}

// keySet returns the keys this process knows, loading them on first use.
func (a *Etcd) keySet(ctx context.Context) (*keySet, error) {
	if s := a.keys.Load(); s != nil {
		return s, nil
	}
	if err := a.lockKeys(ctx); err != nil {
		return nil, err
	}
	defer a.unlockKeys()
	if s := a.keys.Load(); s != nil {
		return s, nil // another caller loaded them while this one waited
	}
	return a.loadKeysLocked(ctx)
}

// ReloadKeys reads the signing keys from etcd now, creating the first key
// if there is none. The guard calls it on each check, and a signature no
// known key verifies makes the keys load again (at most every 250 ms:
// keysReadSince), so a rotation reaches every replica before tokens signed
// with the new key reach it, or on their first sight.
func (a *Etcd) ReloadKeys(ctx context.Context) (*tokens.Keyring, error) {
	if err := a.lockKeys(ctx); err != nil {
		return nil, err
	}
	defer a.unlockKeys()
	set, err := a.loadKeysLocked(ctx)
	if err != nil {
		return nil, err
	}
	return set.ring, nil
}

// keysReadSince returns the keys as a load that began at or after since
// read them: a signature no loaded key verifies, presented at since, may
// be by a key created just before, and only such a load can tell. If the
// last load began earlier, it starts one, no sooner than keyReloadEvery
// after that one began, and waits for it. So forged tokens buy at most
// four etcd reads a second, whoever presents them; callers that queue
// behind one load share its answer; and an answer is never older than the
// question: with etcd away it is the load's error (unavailable), never a
// refusal that an earlier load's keys would make.
func (a *Etcd) keysReadSince(ctx context.Context, since time.Time) (*keySet, error) {
	if err := a.lockKeys(ctx); err != nil {
		return nil, err
	}
	defer a.unlockKeys()
	if !a.keysStarted.Before(since) {
		if a.keysErr != nil {
			return nil, a.keysErr
		}
		return a.keys.Load(), nil
	}
	if wait := time.Until(a.keysStarted.Add(keyReloadEvery)); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, unavailable("wait for the signing keys' load", ctx.Err())
		}
	}
	return a.loadKeysLocked(ctx)
}

// lockKeys takes the right to load the keys, or fails as unavailable when
// ctx ends first: a load waits for etcd, and a request must not wait longer
// than its own deadline for someone else's.
func (a *Etcd) lockKeys(ctx context.Context) error {
	select {
	case a.keysLock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return unavailable("wait for the signing keys' load", ctx.Err())
	}
}

func (a *Etcd) unlockKeys() { <-a.keysLock }

// loadKeysLocked reads the keys and records the attempt; the caller holds
// keysLock.
func (a *Etcd) loadKeysLocked(ctx context.Context) (*keySet, error) {
	started := time.Now() // a linearizable read sees every key created before it began
	set, err := a.readKeys(ctx)
	a.keysStarted, a.keysErr = started, err
	if err != nil {
		return nil, err
	}
	a.keys.Store(set)
	return set, nil
}

// readKeys reads the keys in service and the retired ones at one
// revision, creating the first key on a cluster that has none.
func (a *Etcd) readKeys(ctx context.Context) (*keySet, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	active, retired, err := a.readKeyKVs(ctx)
	if err != nil {
		return nil, err
	}
	if len(active) == 0 {
		n := int64(1)
		if len(retired) > 0 {
			n = keyNumber(strings.TrimPrefix(string(retired[0].Key), retiredKeysPrefix)) + 1
		}
		if _, err := a.addKey(ctx, n, time.Time{}); err != nil {
			return nil, err
		}
		if active, retired, err = a.readKeyKVs(ctx); err != nil {
			return nil, err
		}
	}
	set := &keySet{}
	if set.ring, err = keyringOf(active, keysPrefix); err != nil {
		return nil, err
	}
	if len(retired) > 0 {
		if set.retired, err = keyringOf(retired, retiredKeysPrefix); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// readKeyKVs reads both prefixes, newest first, in one transaction.
func (a *Etcd) readKeyKVs(ctx context.Context) (active, retired []*mvccpb.KeyValue, err error) {
	newestFirst := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend)}
	resp, err := a.cli.Txn(ctx).Then(clientv3.OpGet(keysPrefix, newestFirst...), clientv3.OpGet(retiredKeysPrefix, newestFirst...)).Commit()
	if err != nil {
		return nil, nil, unavailable("read signing keys", err)
	}
	a.observe(resp.Header.Revision)
	return resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs, nil
}

// keyringOf decodes the keys stored under prefix.
func keyringOf(kvs []*mvccpb.KeyValue, prefix string) (*tokens.Keyring, error) {
	keys := make([]tokens.Key, 0, len(kvs))
	for _, kv := range kvs {
		var stored storedKey
		err := json.Unmarshal(kv.Value, &stored)
		key := tokens.Key{ID: strings.TrimPrefix(string(kv.Key), prefix), SignAfter: stored.SignAfter}
		if err == nil {
			key.Secret, err = base64.StdEncoding.DecodeString(stored.Secret)
		}
		if err != nil || len(key.Secret) < tokens.MinKeyLen {
			return nil, fmt.Errorf("authority: etcd key %s does not hold a signing key", kv.Key)
		}
		keys = append(keys, key)
	}
	return tokens.NewKeyring(keys...)
}

// keyNumber reads a key ID's sequence number (0 if it is none).
func keyNumber(id string) int64 {
	n, _ := strconv.ParseInt(strings.TrimLeft(id, "0"), 10, 64)
	return n
}

// storedKey is a signing key as etcd holds it.
type storedKey struct {
	Secret    string    `json:"secret"` // base64, 32 random bytes
	SignAfter time.Time `json:"sign_after"`
	RetiredAt time.Time `json:"retired_at,omitzero"`
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
	// Keys is never empty (it creates the first), and retire never takes
	// the newest key: the next number follows it.
	id, err := a.addKey(ctx, keyNumber(infos[0].ID)+1, time.Now().Add(signAfter))
	if err != nil {
		return "", err
	}
	_, err = a.ReloadKeys(ctx)
	return id, err
}

// Keys lists the signing keys in service, newest first, without their
// bytes; on a new cluster it creates the first.
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
	if _, err := a.keyring(ctx); err != nil {
		return nil, nil, err
	}
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
		infos[i] = KeyInfo{ID: strings.TrimPrefix(string(kv.Key), prefix), Revision: kv.CreateRevision, SignAfter: stored.SignAfter, RetiredAt: stored.RetiredAt}
		if !now.Before(stored.SignAfter) && signer > i {
			signer = i
		}
	}
	if len(infos) > 0 && !now.IsZero() {
		infos[signer].Signing = true
	}
	return infos
}

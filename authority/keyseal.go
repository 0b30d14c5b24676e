package authority

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/fencegw/fencegw/kek"
	"github.com/fencegw/fencegw/outcome"
	"github.com/fencegw/fencegw/tokens"
)

// Signing keys rest in etcd sealed under a key-encryption key (package
// kek) that only the gateways and `fencegw keys` hold: etcd, a snapshot,
// a backup or a client that may read /fencegw/ learns nothing that signs.
// A key this process cannot open is left out of its keyring and named
// (UnusableKeys); it never stops the others from working.

// KEKs is where an authority finds its key-encryption keys as they stand
// now: a *kek.Ring, or a file read again when it changes.
type KEKs interface{ Current() *kek.Ring }

var (
	// ErrNoKEK means an authority made without key-encryption keys was
	// asked for signing keys: it may read etcd, never sign nor verify.
	ErrNoKEK = errors.New("authority: no key-encryption key (--token-kek-file): the signing keys cannot be opened nor made")
	// ErrKeysSealed means that no signing key in service opens with this
	// process's KEKs, or that a token may be signed by one that does not:
	// the authority cannot tell a token from a forgery. Nothing was
	// written; another replica, or this one with the right KEK, may tell.
	ErrKeysSealed = outcome.New("authority: signing keys in etcd do not open with this replica's key-encryption keys", outcome.NotApplied)
)

// UnusableKey is a signing key in etcd that this process cannot use.
type UnusableKey struct {
	ID      string
	Retired bool
	Err     error // why: its KEK is not held, it does not open, it is in clear, it is no key
}

// errClearKey is why a key written before keys were sealed is not used.
var errClearKey = errors.New("stored in clear (written before signing keys were sealed): `fencegw keys rewrap` seals it; until then only a gateway with --read-clear-token-keys uses it")

// keyAD names a signing key for its seal: the seal holds only under the
// key's own ID, so a sealed key copied under another ID does not open.
func keyAD(id string) string { return "token-key/" + id }

// sealKey is secret as stored for key id, sealed under ring's newest KEK.
func sealKey(ring *kek.Ring, id string, secret []byte, stored storedKey) ([]byte, error) {
	sealed, err := ring.Seal(keyAD(id), secret)
	if err != nil {
		return nil, err
	}
	stored.Secret, stored.Sealed = "", &sealed
	return json.Marshal(stored)
}

// openKey returns the secret of a stored key: sealed, it opens under one
// of ring's KEKs; in clear, it is read only if readClear says so.
func openKey(ring *kek.Ring, id string, value []byte, readClear bool) ([]byte, storedKey, error) {
	var stored storedKey
	if err := json.Unmarshal(value, &stored); err != nil {
		return nil, stored, errors.New("does not hold a signing key")
	}
	var secret []byte
	var err error
	switch {
	case stored.Sealed != nil:
		secret, err = ring.Open(keyAD(id), *stored.Sealed)
	case stored.Secret != "" && !readClear:
		return nil, stored, errClearKey
	default:
		if secret, err = base64.StdEncoding.DecodeString(stored.Secret); err != nil {
			err = errors.New("does not hold a signing key")
		}
	}
	if err == nil && len(secret) < tokens.MinKeyLen {
		err = errors.New("does not hold a signing key")
	}
	return secret, stored, err
}

// openKeys opens the keys stored under prefix (newest first) into a
// keyring, leaving out those that do not open; ring nil if none did.
func openKeys(ring *kek.Ring, kvs []*mvccpb.KeyValue, prefix string, readClear bool) (*tokens.Keyring, []UnusableKey, error) {
	var keys []tokens.Key
	var unusable []UnusableKey
	for _, kv := range kvs {
		id := strings.TrimPrefix(string(kv.Key), prefix)
		secret, stored, err := openKey(ring, id, kv.Value, readClear)
		if err != nil {
			unusable = append(unusable, UnusableKey{ID: id, Retired: prefix == retiredKeysPrefix, Err: err})
			continue
		}
		keys = append(keys, tokens.Key{ID: id, Secret: secret, SignAfter: stored.SignAfter})
	}
	if len(keys) == 0 {
		return nil, unusable, nil
	}
	keyring, err := tokens.NewKeyring(keys...)
	return keyring, unusable, err
}

// kekRing is the KEKs as they stand now.
func (a *Etcd) kekRing() (*kek.Ring, error) {
	if a.keks == nil {
		return nil, ErrNoKEK
	}
	return a.keks.Current(), nil
}

// ReadClearKeys makes the authority use signing keys stored in clear, as
// fencegw wrote them before keys were sealed: for the move of a
// deployment to sealed keys, until `fencegw keys rewrap` has sealed them.
func (a *Etcd) ReadClearKeys() { a.readClear.Store(true) }

// UnusableKeys are the signing keys the last load of keys could not use,
// in service first.
func (a *Etcd) UnusableKeys() []UnusableKey {
	if s := a.keys.Load(); s != nil {
		return s.unusable
	}
	return nil
}

// KeyCounts are the signing keys in service this process opened, and
// those in etcd it could not, as the last load of keys found them.
func (a *Etcd) KeyCounts() (opened, unusable int) {
	if s := a.keys.Load(); s != nil {
		return s.opened, len(s.unusable)
	}
	return 0, 0
}

// sealedKeysError is why no key in service can be used: each one's reason.
func sealedKeysError(unusable []UnusableKey) error {
	var why []string
	for _, u := range unusable {
		if !u.Retired {
			why = append(why, fmt.Sprintf("key %s: %v", u.ID, u.Err))
		}
	}
	return unavailable("load signing keys", fmt.Errorf("%w: %s; is --token-kek-file the KEK file the other gateways hold?", ErrKeysSealed, strings.Join(why, "; ")))
}

// unopened reports whether a key in service was left out of s.
func (s *keySet) unopened() []string {
	var ids []string
	for _, u := range s.unusable {
		if !u.Retired {
			ids = append(ids, u.ID)
		}
	}
	return ids
}

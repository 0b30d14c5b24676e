package tokens

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
	"sync"
	"time"
)

// MinKeyLen is the shortest signing key a Keyring takes.
const MinKeyLen = 32

// Keyring signs the tokens a gateway issues and verifies the ones it is
// shown. A signature is HMAC-SHA256, truncated to 128 bits, over the
// token's epoch and revision (and permit, under a tag of its own), the
// resource it was granted for and the client it was granted to: a token cannot be guessed from the revision,
// nor spent on another resource or by another client. The newest key
// whose time has come signs; every key verifies, so keys rotate without
// refusing tokens signed before the rotation, and a new key can be known
// to every replica before any of them signs with it.
type Keyring struct {
	keys []*macKey // newest first
}

// Key is one signing key: at least MinKeyLen secret bytes, used to sign
// from SignAfter on (to verify at once). ID names it to its owner (the
// authority records which key signed a lease's token), never to a client.
type Key struct {
	ID        string
	Secret    []byte
	SignAfter time.Time
}

// macKey is one key with a pool of its HMAC states: a state costs several
// allocations to set up, and verifying runs on every write.
type macKey struct {
	id        string
	signAfter time.Time
	pool      sync.Pool // of *macState
}

// macState is an HMAC with room for a message and its sum: passed to the
// hash's methods, buffers on the stack would escape, one allocation each.
type macState struct {
	h   hash.Hash
	msg []byte
	sum []byte
}

// NewKeyring returns a keyring of keys, newest first; the oldest signs
// if no key's time has come.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("tokens: a keyring needs a key")
	}
	k := &Keyring{}
	for _, key := range keys {
		if len(key.Secret) < MinKeyLen {
			return nil, errors.New("tokens: a signing key must be at least 32 bytes")
		}
		secret := append([]byte(nil), key.Secret...)
		k.keys = append(k.keys, &macKey{id: key.ID, signAfter: key.SignAfter, pool: sync.Pool{New: func() any {
			return &macState{h: hmac.New(sha256.New, secret), msg: make([]byte, 0, 512), sum: make([]byte, 0, sha256.Size)}
		}}})
	}
	return k, nil
}

// Sign returns t signed for resource and client ("" when the policy
// declares no clients) with the newest key whose time has come.
func (k *Keyring) Sign(t Token, resource, client string) Token {
	t.Sig = k.signer().sum(t, resource, client)
	return t
}

// Signer returns the ID of the key Sign uses now.
func (k *Keyring) Signer() string { return k.signer().id }

func (k *Keyring) signer() *macKey {
	now := time.Now()
	for _, key := range k.keys {
		if !now.Before(key.signAfter) {
			return key
		}
	}
	return k.keys[len(k.keys)-1]
}

// SignWith returns t signed for resource and client with the key id,
// whether or not its time has come; false if the keyring has no such key.
// A caller that recorded which key signs a token signs it with that one.
func (k *Keyring) SignWith(id string, t Token, resource, client string) (Token, bool) {
	for _, key := range k.keys {
		if key.id == id {
			t.Sig = key.sum(t, resource, client)
			return t, true
		}
	}
	return Token{}, false
}

// Verify reports whether t's signature is one of the keyring's for resource
// and client. Each comparison takes the same time whatever the bytes.
func (k *Keyring) Verify(t Token, resource, client string) bool {
	if !t.Signed() {
		return false
	}
	ok := false
	for _, key := range k.keys {
		sig := key.sum(t, resource, client)
		ok = hmac.Equal(sig[:], t.Sig[:]) || ok
	}
	return ok
}

// sum is the MAC over an unambiguous encoding: a version tag, both numbers
// fixed-size, each string length-prefixed.
func (m *macKey) sum(t Token, resource, client string) Sig {
	st := m.pool.Get().(*macState)
	defer m.pool.Put(st)
	var b []byte
	if t.Permit > 0 {
		// Another tag: a permit's token and a lock's never verify as
		// each other, whatever their resources are called.
		b = append(st.msg[:0], "fencegw permit v1\x00"...)
	} else {
		b = append(st.msg[:0], "fencegw token v1\x00"...)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(t.Epoch))
	b = binary.BigEndian.AppendUint64(b, uint64(t.Revision))
	if t.Permit > 0 {
		b = binary.BigEndian.AppendUint64(b, uint64(t.Permit))
	}
	b = binary.AppendUvarint(b, uint64(len(resource)))
	b = append(b, resource...)
	b = binary.AppendUvarint(b, uint64(len(client)))
	b = append(b, client...)
	st.msg = b
	st.h.Reset()
	st.h.Write(b)
	st.sum = st.h.Sum(st.sum[:0])
	var sig Sig
	copy(sig[:], st.sum)
	return sig
}

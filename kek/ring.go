package kek

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// Size is a KEK's length in bytes: an AES-256 key.
const Size = 32

var (
	// ErrUnknownKEK means a key sealed under a KEK the ring does not hold.
	ErrUnknownKEK = errors.New("kek: sealed under a KEK this file does not hold")
	// ErrOpen means a sealed key that its KEK does not open: altered, or
	// sealed for another name.
	ErrOpen = errors.New("kek: does not open under its KEK: altered, or sealed for another key")
)

// Ring is the KEKs of one file: the newest seals, each opens what it
// sealed. A Ring never changes; a file read again is a new Ring.
type Ring struct {
	keks []entry // newest first
}

type entry struct {
	id   string
	aead cipher.AEAD
}

// Sealed is a secret sealed under a KEK, as it is stored.
type Sealed struct {
	KEK string `json:"kek"`    // the ID of the KEK that sealed it
	Box []byte `json:"sealed"` // nonce, then ciphertext and tag
}

// newRing makes a ring of keks, oldest first (as a file lists them).
func newRing(keks [][]byte) (*Ring, error) {
	r := &Ring{}
	for i := len(keks) - 1; i >= 0; i-- {
		block, err := aes.NewCipher(keks[i])
		if err != nil {
			return nil, fmt.Errorf("kek: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("kek: %w", err)
		}
		r.keks = append(r.keks, entry{id: ID(keks[i]), aead: aead})
	}
	return r, nil
}

// ID names kek without revealing it: the first 8 bytes of an HMAC under
// kek of a fixed label, in hex.
func ID(kek []byte) string {
	m := hmac.New(sha256.New, kek)
	m.Write([]byte("fencegw kek id v1"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// Current returns r: a Ring is its own source of KEKs, for callers that
// take a file kept current.
func (r *Ring) Current() *Ring { return r }

// Newest is the ID of the KEK that seals.
func (r *Ring) Newest() string { return r.keks[0].id }

// IDs are the IDs of r's KEKs, newest first.
func (r *Ring) IDs() []string {
	ids := make([]string, len(r.keks))
	for i, e := range r.keks {
		ids[i] = e.id
	}
	return ids
}

// Holds reports whether r holds the KEK id.
func (r *Ring) Holds(id string) bool {
	_, ok := r.find(id)
	return ok
}

// Seal seals secret under the newest KEK, bound to name.
func (r *Ring) Seal(name string, secret []byte) (Sealed, error) {
	e := r.keks[0]
	nonce := make([]byte, e.aead.NonceSize(), e.aead.NonceSize()+len(secret)+e.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return Sealed{}, fmt.Errorf("kek: seal: %w", err)
	}
	return Sealed{KEK: e.id, Box: e.aead.Seal(nonce, nonce, secret, additionalData(name))}, nil
}

// Open returns the secret s holds, if s was sealed for name under one of
// r's KEKs and not altered since; else an error that is ErrUnknownKEK or
// ErrOpen and quotes nothing of s.
func (r *Ring) Open(name string, s Sealed) ([]byte, error) {
	e, ok := r.find(s.KEK)
	if !ok {
		return nil, fmt.Errorf("%w (KEK %s)", ErrUnknownKEK, printable(s.KEK))
	}
	n := e.aead.NonceSize()
	if len(s.Box) < n+e.aead.Overhead() {
		return nil, fmt.Errorf("%w (KEK %s)", ErrOpen, e.id)
	}
	secret, err := e.aead.Open(nil, s.Box[:n], s.Box[n:], additionalData(name))
	if err != nil {
		return nil, fmt.Errorf("%w (KEK %s)", ErrOpen, e.id)
	}
	return secret, nil
}

func (r *Ring) find(id string) (entry, bool) {
	for _, e := range r.keks {
		if e.id == id {
			return e, true
		}
	}
	return entry{}, false
}

// additionalData binds a sealed secret to its name, under a label of its
// own so that it never opens as anything else sealed with the same KEK.
func additionalData(name string) []byte {
	return append([]byte("fencegw sealed key v1\x00"), name...)
}

// printable is a KEK ID as read from storage, fit for an error: an ID is
// 16 hex digits, anything else is named by its length only.
func printable(id string) string {
	if len(id) == 16 {
		if _, err := hex.DecodeString(id); err == nil {
			return id
		}
	}
	return fmt.Sprintf("of a %d-byte ID that is none of fencegw's", len(id))
}

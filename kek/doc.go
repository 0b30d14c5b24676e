// Package kek holds the key-encryption keys (KEKs) that seal fencegw's
// signing keys where they rest: etcd, its snapshots and its backups hold
// only sealed keys, which sign nothing without a KEK that only the
// gateways and the `fencegw keys` command hold.
//
// # The file (file.go)
//
// A KEK file holds one KEK a line, each the standard base64 of 32 random
// bytes (`fencegw kek new` writes one, as does `openssl rand -base64 32`);
// blank lines and lines starting with # are ignored. The last line is the
// newest KEK: it seals new keys, and every KEK of the file opens the keys
// it sealed, so that a KEK rotates by appending a line, re-sealing
// (`fencegw keys rewrap`), then removing the old line. A KEK is named by
// an ID derived from it one way, which says which KEK sealed a key
// without saying anything of the KEK.
//
// # Sealing (ring.go)
//
// A key is sealed with AES-256-GCM under a fresh random nonce, bound to a
// name (the signing key's ID) as associated data: a sealed key copied
// under another name does not open.
package kek

package authority

import (
	"context"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// Loading the signing keys: once on first use, at each watchdog check, and
// when a signature no loaded key verifies needs etcd's word (keys.go holds
// what they are and how they rotate).

// keySet is what a process knows of the signing keys.
type keySet struct {
	ring    *tokens.Keyring // the keys in service: the newest whose time has come signs, all verify
	retired *tokens.Keyring // nil if none: only names a refusal, never accepts
	// unusable are the keys that did not open (keyseal.go), in service
	// first: a signature none of ring's keys verifies may be by one of
	// those in service.
	unusable []UnusableKey
	opened   int // keys in service in ring
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
// if there is none. The watchdog calls it on each check, and a signature no
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
// revision, creating the first key on a cluster that has none, and opens
// them under the KEKs. It fails if no key in service opens.
func (a *Etcd) readKeys(ctx context.Context) (*keySet, error) {
	keks, err := a.kekRing()
	if err != nil {
		return nil, err
	}
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
	readClear := a.readClear.Load()
	ring, unusable, err := openKeys(keks, active, keysPrefix, readClear)
	if err != nil {
		return nil, err
	}
	set.ring, set.unusable, set.opened = ring, unusable, len(active)-len(unusable)
	if set.retired, unusable, err = openKeys(keks, retired, retiredKeysPrefix, readClear); err != nil {
		return nil, err
	}
	set.unusable = append(set.unusable, unusable...)
	if set.ring == nil {
		return nil, sealedKeysError(set.unusable)
	}
	return set, nil
}

// readKeyKVs reads both prefixes, newest first, in one transaction.
func (a *Etcd) readKeyKVs(ctx context.Context) (active, retired []*mvccpb.KeyValue, err error) {
	newestFirst := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend)}
	resp, err := reads(named("active", clientv3.OpGet(keysPrefix, newestFirst...)), named("retired", clientv3.OpGet(retiredKeysPrefix, newestFirst...))).commit(ctx, a.cli)
	if err != nil {
		return nil, nil, unavailable("read signing keys", err)
	}
	a.observe(resp.Header.Revision)
	return resp.kvs("active"), resp.kvs("retired"), nil
}

// keyNumber reads a key ID's sequence number (0 if it is none).
func keyNumber(id string) int64 {
	n, _ := strconv.ParseInt(strings.TrimLeft(id, "0"), 10, 64)
	return n
}

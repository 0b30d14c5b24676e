package authority

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/kek"
)

// KeyRewrap is RewrapKeys's account of one signing key.
type KeyRewrap struct {
	ID      string `json:"id"`
	Retired bool   `json:"retired"`
	From    string `json:"from"`  // the KEK it was sealed under; "": in clear
	To      string `json:"to"`    // the KEK it is sealed under now; "": left as it was (Error says why)
	Error   string `json:"error"` // why it could not be sealed again
}

// rewrapAttempts bounds RewrapKeys's rounds: a round starts again only
// for keys retired or rotated between its read and its write.
const rewrapAttempts = 3

// RewrapKeys seals every signing key, in service and retired, under the
// newest KEK: a key stored in clear (the move to sealed keys) or sealed
// under an older KEK (a KEK rotation). A key already under the newest is
// left alone, so it may run again. Each key is written only if it has not
// changed since it was read; one that did is read again. A key no KEK
// opens is left as it was, and the error, ErrKeysSealed, names it; the
// others are sealed all the same. The secrets never change: every token
// stays valid.
func (a *Etcd) RewrapKeys(ctx context.Context) ([]KeyRewrap, error) {
	keks, err := a.kekRing()
	if err != nil {
		return nil, err
	}
	var done []KeyRewrap
	for attempt := 1; ; attempt++ {
		active, retired, err := a.readKeyKVs(ctx)
		if err != nil {
			return nil, err
		}
		done = done[:0]
		changed := false
		for _, k := range append(keyKVs(active, keysPrefix), keyKVs(retired, retiredKeysPrefix)...) {
			r, ok, err := a.rewrapKey(ctx, keks, k)
			if err != nil {
				return nil, err
			}
			changed = changed || !ok
			done = append(done, r)
		}
		if !changed {
			break
		}
		if attempt == rewrapAttempts {
			return done, unavailable("rewrap signing keys", errors.New("the keys kept changing while they were sealed again; run it again"))
		}
	}
	var failed []string
	for _, r := range done {
		if r.Error != "" {
			failed = append(failed, fmt.Sprintf("key %s: %s", r.ID, r.Error))
		}
	}
	if len(failed) > 0 {
		return done, fmt.Errorf("%w: %s; left as they were: add the KEK that sealed them to --token-kek-file", ErrKeysSealed, strings.Join(failed, "; "))
	}
	return done, nil
}

// keyKV is a stored signing key with where it was read.
type keyKV struct {
	kv      *mvccpb.KeyValue
	id      string
	retired bool
}

func keyKVs(kvs []*mvccpb.KeyValue, prefix string) []keyKV {
	out := make([]keyKV, len(kvs))
	for i, kv := range kvs {
		out[i] = keyKV{kv: kv, id: strings.TrimPrefix(string(kv.Key), prefix), retired: prefix == retiredKeysPrefix}
	}
	return out
}

// rewrapKey seals k under keks' newest KEK unless it is already; false if
// k changed since it was read (the round must read it again).
func (a *Etcd) rewrapKey(ctx context.Context, keks *kek.Ring, k keyKV) (KeyRewrap, bool, error) {
	r := KeyRewrap{ID: k.id, Retired: k.retired}
	secret, stored, err := openKey(keks, k.id, k.kv.Value, true)
	if stored.Sealed != nil {
		r.From = stored.Sealed.KEK
	}
	switch {
	case err != nil:
		r.Error = err.Error()
		return r, true, nil
	case r.From == keks.Newest():
		r.To = r.From
		return r, true, nil
	}
	value, err := sealKey(keks, k.id, secret, stored)
	if err != nil {
		return r, false, err
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := txn{
		ifs:  []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(string(k.kv.Key)), "=", k.kv.ModRevision)},
		then: []txnOp{named("key", clientv3.OpPut(string(k.kv.Key), string(value)))},
	}.commit(ctx, a.cli)
	if err != nil {
		return r, false, unavailable("rewrap signing key "+k.id, err)
	}
	if resp.Succeeded {
		r.To = keks.Newest()
	}
	return r, resp.Succeeded, nil
}

package authority

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// TokenFloor is a token below every token a live lease holds or may still
// be granted, read with one linearizable etcd transaction, and the
// identity of the etcd that says so: what the fence floor may be raised
// to (package fence's RaiseFloor).
//
// A token is the create revision of its lease's key under lockPrefix,
// holders' and waiters' alike (a waiter's key is its token once granted),
// and lives only while its lease does: the key goes with the lease. So
// the live tokens are the keys there now, and every lease granted after
// this read gets a revision above the read's. The floor is one below the
// lowest of them, or the read's revision when there is none; in the epoch
// read with them, since a token of an older epoch is refused anyway. Any
// other key that ever stands for a token must live under lockPrefix too,
// or this floor would cut it off: a semaphore's permit slots do (their
// lines, under queuesPrefix, hold no tokens, and a waiter in line is
// granted a slot key created after this read).
func (a *Etcd) TokenFloor(ctx context.Context) (floor tokens.Token, identity string, err error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := reads(
		named("epoch", clientv3.OpGet(epochKey)),
		named("identity", clientv3.OpGet(identityKey)),
		named("oldest lock key", clientv3.OpGet(lockPrefix, append(clientv3.WithFirstCreate(), clientv3.WithKeysOnly())...)),
	).commit(ctx, a.cli)
	if err != nil {
		return floor, "", unavailable("read the oldest lock key", err)
	}
	a.observe(resp.Header.Revision)
	epoch, err := epochOf(resp.kvs("epoch"))
	if err != nil {
		return floor, "", err
	}
	if identity, err = identityOf(resp.kvs("identity")); err != nil {
		return floor, "", err
	}
	lowest := resp.Header.Revision + 1
	if kvs := resp.kvs("oldest lock key"); len(kvs) > 0 {
		lowest = min(lowest, kvs[0].CreateRevision)
	}
	return tokens.Token{Epoch: epoch, Revision: lowest - 1}, identity, nil
}

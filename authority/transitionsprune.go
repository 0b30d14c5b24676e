package authority

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A transitions key (holderrecord.go) is written at every grant and would
// otherwise stay forever: one per resource ever locked. It counts grants
// for people (observation, watches, inspect, the status page) and for
// nothing else: a token is its lock key's create revision (lock.go), the
// fence floor reads only lock keys (floor.go), and no transaction of a
// grant, renewal or release compares it. So deleting it can change no
// token and no fencing decision; it only restarts the lock's count, which
// then says "grants since the key was last pruned".
//
// PruneTransitions deletes the transitions keys of locks nobody holds or
// waits for: no holder record and no lock key under the resource, both
// compared in the deleting transaction itself, so a lock granted or
// queued for between the walk and the deletion keeps its count (the
// next grant after a deletion writes the key afresh, counting from 1).

// pruneBatch is how many resources one deleting transaction covers: two
// compares each, well within etcd's default of 128 operations a
// transaction.
const pruneBatch = 32

// PruneTransitions deletes the transitions keys of idle locks and returns
// how many it deleted. It walks the holder records and transitions keys a
// page at a time; ctx bounds it.
func (a *Etcd) PruneTransitions(ctx context.Context) (int64, error) {
	var pruned int64
	var idle []string
	flush := func() error {
		n, err := a.pruneIdleTransitions(ctx, idle)
		pruned += n
		idle = idle[:0]
		return err
	}
	held := "" // the resource whose holder record the walk saw last
	for from, end := heldPrefix, clientv3.GetPrefixRangeEnd(heldPrefix); ; {
		rctx, cancel := bounded(ctx)
		resp, err := a.cli.Get(rctx, from, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(statePage))
		cancel()
		if err != nil {
			return pruned, unavailable("read transitions keys", err)
		}
		for _, kv := range resp.Kvs {
			// A resource's holder record sorts just before its
			// transitions key ("holder" < "transitions"), on this page or
			// the one before.
			resource, name, ok := heldKeyParts(string(kv.Key))
			switch {
			case !ok:
			case name == holderRecordName:
				held = resource
			case resource != held:
				idle = append(idle, resource)
			}
		}
		if len(idle) >= pruneBatch {
			if err := flush(); err != nil {
				return pruned, err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	return pruned, flush()
}

// pruneIdleTransitions deletes the transitions keys of resources, those
// still idle when the deletion commits, pruneBatch at a time; a batch
// where one has been locked since is deleted one by one.
func (a *Etcd) pruneIdleTransitions(ctx context.Context, resources []string) (int64, error) {
	var pruned int64
	for len(resources) > 0 {
		batch := resources[:min(pruneBatch, len(resources))]
		resources = resources[len(batch):]
		n, ok, err := a.deleteIfIdle(ctx, batch)
		pruned += n
		if err != nil {
			return pruned, err
		}
		if ok {
			continue
		}
		for _, r := range batch {
			n, _, err := a.deleteIfIdle(ctx, []string{r})
			pruned += n
			if err != nil {
				return pruned, err
			}
		}
	}
	return pruned, nil
}

// deleteIfIdle deletes the transitions keys of resources in one
// transaction, if none of them has a holder record or a lock key, and
// says how many it deleted (another replica's janitor may have been
// first) and whether the compares held.
func (a *Etcd) deleteIfIdle(ctx context.Context, resources []string) (deleted int64, idle bool, _ error) {
	var t txn
	for _, r := range resources {
		t.ifs = append(t.ifs,
			clientv3.Compare(clientv3.CreateRevision(holderRecordKey(r)), "=", 0),
			// Over a range: true only if no key is in it.
			clientv3.Compare(clientv3.CreateRevision(lockKeyPrefix(r)), "=", 0).WithPrefix())
		t.then = append(t.then, named(r, clientv3.OpDelete(transitionsKey(r))))
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := t.commit(ctx, a.cli)
	if err != nil {
		return 0, false, unavailable("prune transitions keys", err)
	}
	a.observe(resp.Header.Revision)
	if !resp.Succeeded {
		return 0, false, nil
	}
	for _, r := range resources {
		deleted += resp.deleted(r)
	}
	return deleted, true, nil
}

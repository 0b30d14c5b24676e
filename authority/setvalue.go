package authority

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// setValueTries bounds SetValue's attempts: only the holder writes its
// record, so two attempts meet only when the holder races itself.
const setValueTries = 3

// SetValue publishes value as the holder's value of its lock (etcd's
// Election.Proclaim): observers and watchers see it, with no new grant.
// Only owner's lease id, and only while it holds its lock: a waiter's
// lease, like one that is gone or another client's, is ErrLeaseNotFound
// or ErrNotOwner, and nothing changes. ctx bounds the calls.
func (a *Etcd) SetValue(ctx context.Context, id LeaseID, owner, value string) error {
	if err := a.Halted(); err != nil {
		return err
	}
	if err := checkValue(value); err != nil {
		return err
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := reads(named("owner", clientv3.OpGet(ownerKey(id))), named("token record", clientv3.OpGet(leaseTokenKey(id)))).commit(ctx, a.cli)
	if err != nil {
		return unavailable("read lease owner", err)
	}
	if err := ownerIs(resp.kvs("owner"), id, owner); err != nil {
		return err
	}
	var lt leaseToken
	if kvs := resp.kvs("token record"); len(kvs) == 0 || json.Unmarshal(kvs[0].Value, &lt) != nil {
		return fmt.Errorf("lease %s: %w: it has no record of its lock", id, ErrLeaseNotFound)
	}
	for range setValueTries {
		held, err := a.cli.Get(ctx, holderRecordKey(lt.Resource))
		if err != nil {
			return unavailable("read the holder", err)
		}
		var rec holderRecord
		var holder LeaseID
		if len(held.Kvs) > 0 {
			rec, holder, _ = parseHolderRecord(held.Kvs[0].Value)
		}
		if holder != id {
			return fmt.Errorf("lease %s: %w: it does not hold %s's lock (it waits, or its lease ended)", id, ErrLeaseNotFound, lt.Resource)
		}
		rec.Value = value
		b, _ := json.Marshal(rec) // strings only: cannot fail
		put, err := txn{
			ifs: []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(holderRecordKey(lt.Resource)), "=", held.Kvs[0].ModRevision)},
			then: []txnOp{
				named("holder record", clientv3.OpPut(holderRecordKey(lt.Resource), string(b), clientv3.WithIgnoreLease())),
				named("lock key", clientv3.OpPut(lockKeyPrefix(lt.Resource)+id.String(), value, clientv3.WithIgnoreLease())),
			},
		}.commit(ctx, a.cli)
		if err != nil {
			return leaseError("set the value", err)
		}
		if put.Succeeded {
			a.observe(put.Header.Revision)
			return nil
		}
	}
	return fmt.Errorf("set the value: %w: the holder's record kept changing", ErrUnavailable)
}

package authority

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Lock-delay (Chubby): when a holder's lease EXPIRES, its resource is not
// granted again for a while, so that a holder that is merely slow — paused,
// partitioned — has time to notice and stop before a successor starts. A
// RELEASED lock is granted at once: its holder said it was done.
//
// Expiry is told from release by a per-resource record of the last holder,
// kept only for resources with a lock-delay: Release deletes it, expiry
// leaves it behind. The delay counts from when a gateway granting the lock
// first finds the expired holder's record: that is the expiry itself when
// someone was waiting, and later otherwise (the delay is then longer than
// needed, never shorter). It is advice to well-behaved holders; the fence
// remains the guarantee.
const lastHolderPrefix = "/fencegw/lastholder/"

type lastHolder struct {
	Lease      string `json:"lease"`
	DelayUntil int64  `json:"delay_until,omitempty"` // unix ms; set when the expiry is found
}

func lastHolderKey(resource string) string { return lastHolderPrefix + url.PathEscape(resource) }

// honourLockDelay runs once the caller's key is the holder. If the previous
// holder's lease expired, it waits out the delay — or fails at once with a
// *LockedError if the delay ends after waitUntil — then records the caller
// as the last holder. ctx bounds the etcd calls.
func (a *Etcd) honourLockDelay(ctx context.Context, resource string, id LeaseID, delay time.Duration, waitUntil time.Time) error {
	key := lastHolderKey(resource)
	resp, err := a.cli.Get(ctx, key)
	if err != nil {
		return unavailable("read last holder", err)
	}
	if len(resp.Kvs) == 1 {
		var prev lastHolder
		if err := json.Unmarshal(resp.Kvs[0].Value, &prev); err == nil && prev.Lease != id.String() {
			if prev.DelayUntil == 0 {
				prev.DelayUntil = a.now().Add(delay).UnixMilli()
				b, _ := json.Marshal(prev)
				if _, err := a.cli.Put(ctx, key, string(b)); err != nil {
					return unavailable("record lock-delay", err)
				}
			}
			until := time.UnixMilli(prev.DelayUntil)
			if until.After(waitUntil) {
				return a.lockDelayError(resource, until)
			}
			if err := a.sleepUntil(ctx, until); err != nil {
				return unavailable("wait out lock-delay", err)
			}
		}
	}
	b, _ := json.Marshal(lastHolder{Lease: id.String()})
	if _, err := a.cli.Put(ctx, key, string(b)); err != nil {
		return unavailable("record last holder", err)
	}
	return nil
}

// sleepUntil waits for t or ctx, whichever comes first.
func (a *Etcd) sleepUntil(ctx context.Context, t time.Time) error {
	d := t.Sub(a.now())
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// forgetLastHolder marks a lease's lock as released, not expired: it deletes
// the last-holder record of the resource the lease holds, if it names it.
func (a *Etcd) forgetLastHolder(ctx context.Context, id LeaseID) error {
	ttl, err := a.cli.TimeToLive(ctx, clientv3.LeaseID(id), clientv3.WithAttachedKeys())
	if err != nil {
		return leaseError("look up lease", err)
	}
	for _, k := range ttl.Keys {
		rest, ok := strings.CutPrefix(string(k), lockPrefix)
		if !ok {
			continue
		}
		escaped, _, _ := strings.Cut(rest, "/")
		resource, err := url.PathUnescape(escaped)
		if err != nil {
			continue
		}
		key := lastHolderKey(resource)
		b, _ := json.Marshal(lastHolder{Lease: id.String()})
		_, err = a.cli.Txn(ctx).If(clientv3.Compare(clientv3.Value(key), "=", string(b))).Then(clientv3.OpDelete(key)).Commit()
		if err != nil {
			return unavailable("forget last holder", err)
		}
	}
	return nil
}

func (a *Etcd) lockDelayError(resource string, until time.Time) error {
	return fmt.Errorf("%w: in lock-delay until %s after its last holder's lease expired",
		&LockedError{Resource: resource}, until.UTC().Format(time.RFC3339Nano))
}

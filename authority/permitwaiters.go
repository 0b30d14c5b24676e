package authority

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// PermitWaiter is a lease in a semaphore's line that holds no slot yet:
// what an operator needs to revoke it (fencegw lease revoke LEASE).
type PermitWaiter struct {
	Semaphore string
	LeaseID   LeaseID
	Owner     string // "" when authentication is off
	// Since is the revision at which it joined the line: the line is in
	// its order.
	Since int64
}

// maxLineKeys bounds how many keys of the semaphores' lines PermitWaiters
// reads.
const maxLineKeys = 1000

// txnOps is how many operations PermitWaiters puts in one etcd
// transaction: etcd's default limit (--max-txn-ops).
const txnOps = 128

// PermitWaiters lists the leases waiting in the lines of the semaphores
// whose names start with prefix, by semaphore and in line order, at most
// limit of them; truncated says there are more. It needs no policy: a
// lease in a line whose token is not recorded holds no slot. It reads the
// lines' keys (at most maxLineKeys), then their leases' records, a
// transaction of txnOps at a time. ctx bounds the reads.
func (a *Etcd) PermitWaiters(ctx context.Context, prefix string, limit int) (_ []PermitWaiter, truncated bool, _ error) {
	if limit < 1 {
		return nil, false, fmt.Errorf("authority: permit waiters: limit %d, want at least 1", limit)
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	// Escaping works byte by byte: the escaped prefix starts every
	// escaped name it starts.
	line, err := a.cli.Get(ctx, queuesPrefix+url.PathEscape(prefix), clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithLimit(maxLineKeys))
	if err != nil {
		return nil, false, unavailable("read the semaphores' lines", err)
	}
	truncated = line.More
	var ws []PermitWaiter
	for _, kv := range line.Kvs {
		sem, id, ok := queueKeyParts(string(kv.Key))
		if !ok {
			continue
		}
		ws = append(ws, PermitWaiter{Semaphore: sem, LeaseID: id, Since: kv.CreateRevision})
	}
	// Keep those whose lease has no token record, with their owners.
	var out []PermitWaiter
	for chunk := range slices.Chunk(ws, txnOps/2) {
		ops := make([]txnOp, 0, 2*len(chunk))
		for _, w := range chunk {
			// Named by its line key, which no other waiter has.
			ops = append(ops, named("token of "+w.lineKey(), clientv3.OpGet(leaseTokenKey(w.LeaseID), clientv3.WithCountOnly())),
				named("owner of "+w.lineKey(), clientv3.OpGet(ownerKey(w.LeaseID))))
		}
		resp, err := reads(ops...).commit(ctx, a.cli)
		if err != nil {
			return nil, false, unavailable("read the leases in line", err)
		}
		for _, w := range chunk {
			if resp.count("token of "+w.lineKey()) > 0 {
				continue // it holds a slot
			}
			owner := resp.kvs("owner of " + w.lineKey())
			if len(owner) == 0 {
				continue // it ended since the line was read
			}
			w.Owner = string(owner[0].Value)
			out = append(out, w)
		}
	}
	slices.SortStableFunc(out, func(x, y PermitWaiter) int {
		if c := strings.Compare(x.Semaphore, y.Semaphore); c != 0 {
			return c
		}
		return cmp.Compare(x.Since, y.Since)
	})
	if len(out) > limit {
		out, truncated = out[:limit], true
	}
	return out, truncated, nil
}

// lineKey is w's key in its semaphore's line.
func (w PermitWaiter) lineKey() string { return queueKeyPrefix(w.Semaphore) + w.LeaseID.String() }

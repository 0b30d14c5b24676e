package authority

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// grantedPrefix holds, for each lease, when its lock was granted and which
// replica observes its end: "<unix nanoseconds> <observer> held", or
// "… waiting" while it waits for its turn. The key is attached to the
// lease, so a release or an expiry deletes it, and the deletion is what a
// replica watching the prefix sees: a lock's hold time is measured
// whichever replica releases it, or none (expiry).
const grantedPrefix = "/fencegw/granted/"

func grantedKey(id LeaseID) string { return grantedPrefix + id.String() }

func grantedValue(at time.Time, observer string, held bool) string {
	state := "waiting"
	if held {
		state = "held"
	}
	return fmt.Sprintf("%d %s %s", at.UnixNano(), observer, state)
}

// grantedOp marks lease id, for the replica observer, as held since at,
// or as waiting.
func grantedOp(id LeaseID, observer string, at time.Time, held bool) txnOp {
	return named("granted", clientv3.OpPut(grantedKey(id), grantedValue(at, observer, held), clientv3.WithLease(clientv3.LeaseID(id))))
}

// parseGranted reads a grantedKey value.
func parseGranted(v string) (at time.Time, observer string, held bool, ok bool) {
	f := strings.Fields(v)
	if len(f) != 3 {
		return time.Time{}, "", false, false
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return time.Time{}, "", false, false
	}
	return time.Unix(0, n), f[1], f[2] == "held", true
}

// WatchHoldTimes calls observe with the hold time of every lock granted
// with AcquireOptions.Observer == observer once it is released or
// expires, until ctx ends: from the grant to the moment this watch sees
// the lease's keys deleted. Exactly one replica observes a lease, the one
// that granted it; if that replica is gone by then, the hold time is not
// observed. A lease that never got its lock (its wait ended) is not a
// hold.
func (a *Etcd) WatchHoldTimes(ctx context.Context, observer string, observe func(time.Duration)) {
	for ctx.Err() == nil {
		wch := a.cli.Watch(clientv3.WithRequireLeader(ctx), grantedPrefix,
			clientv3.WithPrefix(), clientv3.WithFilterPut(), clientv3.WithPrevKV())
		for resp := range wch {
			if resp.Err() != nil {
				break // compacted, or the leader lost: watch again from now
			}
			now := a.now()
			for _, ev := range resp.Events {
				if ev.PrevKv == nil {
					continue
				}
				at, who, held, ok := parseGranted(string(ev.PrevKv.Value))
				if ok && held && who == observer {
					observe(now.Sub(at))
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second): // etcd away: try again, gently
		}
	}
}

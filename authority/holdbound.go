package authority

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Two things bound a hold beyond its lease's TTL, because a TTL alone
// does not:
//
//   - max_hold (a resource's policy): a holder that keeps renewing is not
//     a holder that works (a sidecar renewing for a wedged job). A
//     keepalive past the bound is refused and the lease revoked.
//   - etcd itself renews every lease to its full TTL at each leader
//     election, so a lease whose holder is gone (its release lost with a
//     killed gateway) lives on as long as elections keep coming: in fault
//     runs with frequent leader kills, two to four minutes for a 30 s
//     lease. So every keepalive records when it renewed, and the gateways
//     revoke a lease nobody has renewed for two TTLs (RunReaper).
//
// Both records hold times of the gateways' wall clocks: they bound
// liveness, not safety (the fence refuses a late holder's writes however
// long its lease lived), and the margin of a whole TTL absorbs the skew
// between replicas. They are attached to the lease, so they go with it.
const (
	holdPrefix    = "/fencegw/hold/"    // "<granted unix ms> <ttl s> <max hold ms>", at grant
	renewedPrefix = "/fencegw/renewed/" // "<unix ms>", at every keepalive
)

func holdKey(id LeaseID) string    { return holdPrefix + id.String() }
func renewedKey(id LeaseID) string { return renewedPrefix + id.String() }

// holdRecord is what a grant records of a hold.
type holdRecord struct {
	granted time.Time
	ttl     time.Duration
	maxHold time.Duration // 0: none
}

func (h holdRecord) value() string {
	return fmt.Sprintf("%d %d %d", h.granted.UnixMilli(), int64(h.ttl/time.Second), h.maxHold.Milliseconds())
}

func parseHold(kvs []*mvccpb.KeyValue) (holdRecord, bool) {
	if len(kvs) == 0 {
		return holdRecord{}, false
	}
	f := strings.Fields(string(kvs[0].Value))
	if len(f) != 3 {
		return holdRecord{}, false
	}
	var n [3]int64
	for i := range f {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil || v < 0 {
			return holdRecord{}, false
		}
		n[i] = v
	}
	return holdRecord{granted: time.UnixMilli(n[0]), ttl: time.Duration(n[1]) * time.Second, maxHold: time.Duration(n[2]) * time.Millisecond}, true
}

// ErrHeldTooLong is wrapped by a keepalive past the resource's max_hold:
// the lease is revoked, and its holder must stop as on any lost lease.
var ErrHeldTooLong = errors.New("authority: held past the resource's max_hold")

// recordHold records the hold of lease id, granted now, and the grant
// itself (ops: grantOps, holderrecord.go) in the same transaction.
func (a *Etcd) recordHold(ctx context.Context, id LeaseID, ttl, maxHold time.Duration, ops ...clientv3.Op) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	now := a.now()
	with := clientv3.WithLease(clientv3.LeaseID(id))
	ops = append([]clientv3.Op{
		clientv3.OpPut(holdKey(id), holdRecord{granted: now, ttl: ttl, maxHold: maxHold}.value(), with),
		clientv3.OpPut(renewedKey(id), strconv.FormatInt(now.UnixMilli(), 10), with),
	}, ops...)
	_, err := a.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return unavailable("record the hold", err)
	}
	return nil
}

// pastMaxHold says whether the hold recorded in kvs is past its max_hold
// at now.
func pastMaxHold(kvs []*mvccpb.KeyValue, now time.Time) bool {
	h, ok := parseHold(kvs)
	return ok && h.maxHold > 0 && now.Sub(h.granted) > h.maxHold
}

// reapEvery is how often RunReaper looks.
const reapEvery = 2 * time.Second

// RunReaper revokes, until ctx ends, every lease nobody has renewed for two
// of its TTLs, and every hold past its max_hold by a TTL: holds a keepalive
// would no longer renew, which etcd's leader elections (or a holder that
// stopped renewing through this authority) would otherwise keep alive. Every
// replica may run it; revoking a lease twice is harmless. Leases granted by
// gateways that record no hold are left to etcd.
func (a *Etcd) RunReaper(ctx context.Context, revoked func(LeaseID, string)) {
	t := time.NewTicker(reapEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_ = a.Reap(ctx, revoked)
	}
}

// Reap is one round of RunReaper.
func (a *Etcd) Reap(ctx context.Context, revoked func(LeaseID, string)) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := a.cli.Txn(ctx).Then(
		clientv3.OpGet(holdPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(renewedPrefix, clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return unavailable("read holds", err)
	}
	renewed := map[string]time.Time{}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		if ms, err := strconv.ParseInt(string(kv.Value), 10, 64); err == nil {
			renewed[strings.TrimPrefix(string(kv.Key), renewedPrefix)] = time.UnixMilli(ms)
		}
	}
	now := a.now()
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		h, ok := parseHold([]*mvccpb.KeyValue{kv})
		idText := strings.TrimPrefix(string(kv.Key), holdPrefix)
		id, err := ParseLeaseID(idText)
		if !ok || err != nil {
			continue
		}
		last, ok := renewed[idText]
		if !ok {
			last = h.granted
		}
		why := ""
		switch {
		case now.Sub(last) > 2*h.ttl:
			why = fmt.Sprintf("not renewed for %s, over two TTLs", now.Sub(last).Round(time.Second))
		case h.maxHold > 0 && now.Sub(h.granted) > h.maxHold+h.ttl:
			why = fmt.Sprintf("held %s, past its max_hold %s", now.Sub(h.granted).Round(time.Second), h.maxHold)
		default:
			continue
		}
		if err := a.markEnding(ctx, id, ending{How: EndRevoked, Actor: GatewayActor, Reason: why}); err != nil && !errors.Is(err, ErrLeaseNotFound) {
			continue // etcd away: the next round looks again
		}
		if _, err := a.cli.Revoke(ctx, clientv3.LeaseID(id)); err != nil && !errors.Is(leaseError("revoke", err), ErrLeaseNotFound) {
			continue
		}
		if revoked != nil {
			revoked(id, why)
		}
	}
	return nil
}

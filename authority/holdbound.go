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
//     keepalive past the bound is refused and the lease revoked. It is
//     timed from the grant by the gateways' wall clocks, which the replica
//     that granted a lease and the one that renews it share only as
//     closely as their clocks agree.
//   - etcd itself renews every lease to its full TTL at each leader
//     election, so a lease whose holder is gone (its release lost with a
//     killed gateway) lives on as long as elections keep coming: in fault
//     runs with frequent leader kills, minutes for a 30 s lease. So every
//     keepalive records that it renewed, and every replica's Reaper
//     revokes a lease it has not seen renewed for its TTL and
//     reapMargin, timed by its own monotonic clock from when it first saw
//     the last renewal's record: no wall clock, no skew between replicas.
//
// Both bound liveness, not safety: the fence refuses a late holder's
// writes however long its lease lived. Both records are attached to the
// lease, so they go with it.
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

// holdOps record the hold of lease id, granted now with ttl, for the
// transaction that records its grant (lockgrant.go).
func holdOps(id LeaseID, ttl, maxHold time.Duration, now time.Time) []txnOp {
	with := clientv3.WithLease(clientv3.LeaseID(id))
	return []txnOp{
		named("hold", clientv3.OpPut(holdKey(id), holdRecord{granted: now, ttl: ttl, maxHold: maxHold}.value(), with)),
		named("renewed", clientv3.OpPut(renewedKey(id), strconv.FormatInt(now.UnixMilli(), 10), with)),
	}
}

// pastMaxHold says whether the hold recorded in kvs is past its max_hold
// at now.
func pastMaxHold(kvs []*mvccpb.KeyValue, now time.Time) bool {
	h, ok := parseHold(kvs)
	return ok && h.maxHold > 0 && now.Sub(h.granted) > h.maxHold
}

// reapEvery is how often RunReaper looks.
const reapEvery = 2 * time.Second

// reapMargin is how much longer than its TTL a Reaper waits for a lease's
// renewal: the time between a keepalive's renewal by etcd and its record,
// with room to spare, so that a holder renewing at the last moment of its
// TTL is not cut off.
const reapMargin = time.Second

// RunReaper revokes, until ctx ends, every lease nobody has renewed for
// its TTL and reapMargin, and every hold past its max_hold by a TTL:
// holds a keepalive would no longer renew, which etcd's leader elections
// (or a holder that stopped renewing through this authority) would
// otherwise keep alive. A replica sees a renewal at most reapEvery after
// it, and looks again when a lease it saw becomes due: an abandoned lease
// thus ends within its TTL, reapMargin, reapEvery and a few etcd round
// trips of its last renewal while some replica runs it and etcd has a
// quorum (one that started meanwhile waits a TTL and reapMargin from its
// first look). Every replica may run it;
// revoking a lease twice is harmless. Leases granted by gateways that
// record no hold are left to etcd.
func (a *Etcd) RunReaper(ctx context.Context, revoked func(LeaseID, string)) {
	r := a.NewReaper()
	t := time.NewTimer(reapEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_ = r.Reap(ctx, revoked)
		// Looks again when a lease it knows becomes due, if that is
		// sooner: a lease ends a round trip after its bound, not a
		// period later.
		next := reapEvery
		if !r.due.IsZero() {
			next = min(next, max(r.due.Sub(a.now()), 10*time.Millisecond))
		}
		t.Reset(next)
	}
}

// A Reaper remembers, between its rounds, when it first saw each lease's
// last renewal. It is not safe for concurrent use.
type Reaper struct {
	a    *Etcd
	seen map[LeaseID]renewalSeen
	due  time.Time // when the first lease it knows is past its bound, if none is renewed; zero: none known
}

// renewalSeen is a lease's last renewal as a Reaper knows it: the etcd
// revision of its record, and when the Reaper first read that revision.
type renewalSeen struct {
	rev int64
	at  time.Time
}

// NewReaper returns a Reaper that has seen nothing yet.
func (a *Etcd) NewReaper() *Reaper { return &Reaper{a: a, seen: map[LeaseID]renewalSeen{}} }

// Reap is one round of RunReaper.
func (r *Reaper) Reap(ctx context.Context, revoked func(LeaseID, string)) error {
	a := r.a
	ctx, cancel := bounded(ctx)
	defer cancel()
	const holds, renewals = "holds", "renewals"
	read, err := reads(
		named(holds, clientv3.OpGet(holdPrefix, clientv3.WithPrefix())),
		named(renewals, clientv3.OpGet(renewedPrefix, clientv3.WithPrefix())),
	).commit(ctx, a.cli)
	if err != nil {
		return unavailable("read holds", err)
	}
	renewedAt := map[string]int64{} // the revision of each lease's last renewal record
	for _, kv := range read.kvs(renewals) {
		renewedAt[strings.TrimPrefix(string(kv.Key), renewedPrefix)] = kv.ModRevision
	}
	now := a.now()
	r.due = time.Time{}
	live := make(map[LeaseID]renewalSeen, len(read.kvs(holds)))
	for _, kv := range read.kvs(holds) {
		h, ok := parseHold([]*mvccpb.KeyValue{kv})
		idText := strings.TrimPrefix(string(kv.Key), holdPrefix)
		id, err := ParseLeaseID(idText)
		if !ok || err != nil {
			continue
		}
		rev, ok := renewedAt[idText]
		if !ok {
			rev = kv.ModRevision // the grant is its first renewal
		}
		seen := r.seen[id]
		if seen.rev != rev {
			seen = renewalSeen{rev: rev, at: now}
		}
		live[id] = seen
		if due := seen.at.Add(h.ttl + reapMargin); r.due.IsZero() || due.Before(r.due) {
			r.due = due
		}
		why := ""
		switch unrenewed := now.Sub(seen.at); {
		case unrenewed > h.ttl+reapMargin:
			why = fmt.Sprintf("not renewed for %s, past its TTL of %s", unrenewed.Round(100*time.Millisecond), h.ttl)
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
	r.seen = live // forget the leases that are gone
	return nil
}

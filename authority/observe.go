package authority

import (
	"cmp"
	"context"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencegw/fencegw/tokens"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxObserved bounds how many contenders Observe reports.
const maxObserved = 100

// Contender is one lease on a resource's lock: the holder or a waiter.
type Contender struct {
	LeaseID LeaseID
	// Token is the lease's fencing token: the epoch current when its key
	// was created (0 when etcd no longer remembers, after a compaction
	// past an epoch bump) and the key's create revision.
	Token tokens.Token
	TTL   time.Duration // remaining, as etcd reports it; 0 if just expired
	Value string        // set by the holder at acquisition, e.g. a leader's address
}

// LockState is what a resource's lock looks like at one etcd revision.
type LockState struct {
	Resource string
	Revision int64
	Holder   *Contender  // nil when the lock is free
	Waiters  []Contender // in the order they will be granted; the first maxObserved-1
	Waiting  int64       // all the waiters, shown or not
}

// Observe reports a resource's holder and waiters without taking part, so a
// lease on "leader/<name>" doubles as leader election with observation.
// It costs three etcd reads whatever the line's length: the keys (at most
// maxObserved, and the count of all), the epoch, and the holder's TTL;
// waiters are shown without theirs. ctx bounds the reads.
func (a *Etcd) Observe(ctx context.Context, resource string) (LockState, error) {
	if err := tokens.CheckResource(resource); err != nil {
		return LockState{}, err
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := a.cli.Get(ctx, lockKeyPrefix(resource), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(maxObserved))
	if err != nil {
		return LockState{}, unavailable("observe lock", err)
	}
	a.observe(resp.Header.Revision)
	epochs, err := a.epochsAt(ctx)
	if err != nil {
		return LockState{}, err
	}
	st := LockState{Resource: resource, Revision: resp.Header.Revision, Waiting: max(resp.Count-1, 0)}
	for i, kv := range resp.Kvs {
		st.add(a.contender(ctx, kv, epochs, i == 0))
	}
	return st, nil
}

// ObserveAll reports the resources whose names start with prefix and that
// have a holder or waiters, in the order of their escaped names, from at
// most limit lock keys: what `fencegw inspect` and the status page show.
// It costs one range read and one TTL read per resource, its holder's;
// as with Observe, waiters are shown without theirs. truncated says there
// were more keys; the resource the limit cut through is left out rather
// than shown with a wrong holder.
func (a *Etcd) ObserveAll(ctx context.Context, prefix string, limit int) (_ []LockState, truncated bool, _ error) {
	// Escaping works byte by byte, so the escaped prefix is a prefix of
	// every escaped name it starts.
	resp, err := a.cli.Get(ctx, lockPrefix+url.PathEscape(prefix), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend), clientv3.WithLimit(int64(limit)))
	if err != nil {
		return nil, false, unavailable("observe locks", err)
	}
	a.observe(resp.Header.Revision)
	epochs, err := a.epochsAt(ctx)
	if err != nil {
		return nil, false, err
	}
	var out []LockState
	for _, kv := range resp.Kvs {
		escaped, _, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), lockPrefix), "/")
		resource, err := url.PathUnescape(escaped)
		if !ok || err != nil {
			continue // not a lock key of ours
		}
		if len(out) == 0 || out[len(out)-1].Resource != resource {
			out = append(out, LockState{Resource: resource, Revision: resp.Header.Revision})
		}
		st := &out[len(out)-1]
		st.add(a.contender(ctx, kv, epochs, false))
		st.Waiting = int64(len(st.Waiters))
	}
	if resp.More && len(out) > 0 {
		out = out[:len(out)-1]
	}
	// The holders' TTLs, a few at a time: in a row, a page of resources
	// would cost as many round trips to etcd.
	var wg sync.WaitGroup
	slots := make(chan struct{}, observeReads)
	for i := range out {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			out[i].Holder.TTL = a.leaseTTL(ctx, out[i].Holder.LeaseID)
		})
	}
	wg.Wait()
	return out, resp.More, nil
}

// observeReads bounds the TTL reads ObserveAll has in flight at once.
const observeReads = 8

// add files c as the holder or a waiter. Keys under one resource sort by
// lease ID, not by age: the holder is the oldest.
func (st *LockState) add(c Contender) {
	if st.Holder == nil {
		st.Holder = &c
		return
	}
	if c.Token.Revision < st.Holder.Token.Revision {
		*st.Holder, c = c, *st.Holder
	}
	i, _ := slices.BinarySearchFunc(st.Waiters, c, func(x, y Contender) int { return cmp.Compare(x.Token.Revision, y.Token.Revision) })
	st.Waiters = slices.Insert(st.Waiters, i, c)
}

// contender reads one lock key, with its lease's TTL if withTTL (one etcd
// read).
func (a *Etcd) contender(ctx context.Context, kv *mvccpb.KeyValue, epochs func(rev int64) int64, withTTL bool) Contender {
	c := Contender{
		LeaseID: LeaseID(kv.Lease),
		Token:   tokens.Token{Epoch: epochs(kv.CreateRevision), Revision: kv.CreateRevision},
		Value:   string(kv.Value),
	}
	if withTTL {
		c.TTL = a.leaseTTL(ctx, c.LeaseID)
	}
	return c
}

// leaseTTL is what remains of a lease, as etcd reports it (one read); 0
// if it just expired or etcd did not answer.
func (a *Etcd) leaseTTL(ctx context.Context, id LeaseID) time.Duration {
	if ttl, err := a.cli.TimeToLive(ctx, clientv3.LeaseID(id)); err == nil && ttl.TTL > 0 {
		return time.Duration(ttl.TTL) * time.Second
	}
	return 0
}

// epochsAt returns what the epoch was at a revision: a lock key keeps the
// token of the epoch it was created in, even after `fencegw epoch bump`
// (which revokes no lease). Keys newer than the last bump cost nothing; an
// older one costs one read at its revision, and 0 (unknown) if etcd has
// compacted it away.
func (a *Etcd) epochsAt(ctx context.Context) (func(rev int64) int64, error) {
	resp, err := a.cli.Get(ctx, epochKey)
	if err != nil {
		return nil, unavailable("read epoch", err)
	}
	current, err := epochOf(resp.Kvs)
	if err != nil {
		return nil, err
	}
	var since int64 // the revision the current epoch was set at
	if len(resp.Kvs) > 0 {
		since = resp.Kvs[0].ModRevision
	}
	return func(rev int64) int64 {
		if rev >= since {
			return current
		}
		old, err := a.cli.Get(ctx, epochKey, clientv3.WithRev(rev))
		if err != nil {
			return 0
		}
		epoch, err := epochOf(old.Kvs)
		if err != nil {
			return 0
		}
		return epoch
	}, nil
}

// checkValue bounds a lock key's value; it lives in etcd, not PostgreSQL.
func checkValue(v string) error {
	const maxValue = 4096
	if len(v) > maxValue || strings.ContainsRune(v, 0) {
		return ErrBadValue
	}
	return nil
}

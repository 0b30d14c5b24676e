package authority

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/fencegw/fencegw/tokens"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
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
	// Owner is the client the lease was granted to ("" when
	// authentication is off); ObserveAll's holders only.
	Owner string
}

// LockState is what a resource's lock looks like at one etcd revision.
type LockState struct {
	Resource string
	Revision int64
	Holder   *Contender  // nil when the lock is free
	Waiters  []Contender // in the order they will be granted: Observe's first maxObserved-1, none from ObserveAll
	Waiting  int64       // all the waiters, shown or not
	// Transitions counts the grants of the lock so far, the current
	// holder's included (Kubernetes' leaseTransitions).
	Transitions int64
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
	read, err := reads(
		named("contenders", clientv3.OpGet(lockKeyPrefix(resource), clientv3.WithPrefix(),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(maxObserved))),
		named("transitions", clientv3.OpGet(transitionsKey(resource), clientv3.WithKeysOnly())),
	).commit(ctx, a.cli)
	if err != nil {
		return LockState{}, unavailable("observe lock", err)
	}
	a.observe(read.Header.Revision)
	epochs, err := a.epochsAt(ctx)
	if err != nil {
		return LockState{}, err
	}
	st := LockState{Resource: resource, Revision: read.Header.Revision, Waiting: max(read.count("contenders")-1, 0),
		Transitions: versionOf(read.kvs("transitions"))}
	for i, kv := range read.kvs("contenders") {
		st.add(a.contender(ctx, kv, epochs, i == 0))
	}
	return st, nil
}

// ObserveAll reports the locks of the resources whose names start with
// prefix, in the order of their lock keys, at most limit of them: each
// one's holder (with its TTL) and how many wait (Waiting; Waiters stays
// empty, Observe lists them). It is what `fencegw inspect` and the status
// page show; truncated says there are more, or that the walk stopped among
// keys under the locks' prefix that are no lock keys of ours. The keys are
// read at one etcd revision, a page at a time; then, a few at a time, each
// resource's holder (its keys sorted by age, without their values, and
// counted), the holder's value and its TTL. A resource with a long line is
// skipped past when it fills a page, so it cannot crowd the others out. A
// ctx that ends on the way is an error, even where it only cut a TTL read.
func (a *Etcd) ObserveAll(ctx context.Context, prefix string, limit int) (_ []LockState, truncated bool, _ error) {
	if limit < 1 {
		return nil, false, fmt.Errorf("authority: observe locks: limit %d, want at least 1", limit)
	}
	out, truncated, err := a.observeAll(ctx, prefix, limit)
	if errors.Is(err, rpctypes.ErrCompacted) {
		// The revision the walk pinned was compacted under it: once more,
		// at a new one.
		out, truncated, err = a.observeAll(ctx, prefix, limit)
	}
	if err != nil {
		return nil, false, err
	}
	return out, truncated, nil
}

// maxStrayPages is how many pages of keys that are no lock keys of ours
// ObserveAll reads before it stops, reporting itself truncated.
const maxStrayPages = 4

// observePage is how many lock keys ObserveAll reads at once. etcd counts
// every key left in the range on each read, so a walk takes as few reads
// as it can: a page usually holds every resource asked for.
const observePage = 256

// observeAll is ObserveAll's one attempt, at one revision.
func (a *Etcd) observeAll(ctx context.Context, prefix string, limit int) (_ []LockState, truncated bool, _ error) {
	// Escaping works byte by byte, so the escaped prefix is a prefix of
	// every escaped name it starts.
	from := lockPrefix + url.PathEscape(prefix)
	end := clientv3.GetPrefixRangeEnd(from)
	var rev int64
	var out []LockState
	var keyPrefixes []string // each resource's lock keys' prefix
	// Each page starts at a resource's first key or at keys that are no
	// lock keys of ours, so a page that finds no resource holds nothing but
	// such keys: a few of those end the walk, as the limit would, rather
	// than let stray keys make it read on and on.
	for strayPages := 0; from < end; {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(observePage)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := a.cli.Get(ctx, from, opts...)
		if err != nil {
			return nil, false, unavailable("observe locks", err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
			a.observe(rev)
		}
		var last string // the key prefix of the page's last key
		found := len(out)
		for _, kv := range resp.Kvs {
			resource, keyPrefix, ok := lockKeyResource(string(kv.Key))
			last = keyPrefix
			if !ok || (len(keyPrefixes) > 0 && keyPrefixes[len(keyPrefixes)-1] == keyPrefix) {
				continue
			}
			if len(out) == limit {
				return out, true, a.observeHolders(ctx, out, keyPrefixes)
			}
			out = append(out, LockState{Resource: resource, Revision: rev})
			keyPrefixes = append(keyPrefixes, keyPrefix)
		}
		if !resp.More {
			break
		}
		if len(out) == found {
			if strayPages++; strayPages == maxStrayPages {
				return out, true, a.observeHolders(ctx, out, keyPrefixes)
			}
		}
		from = clientv3.GetPrefixRangeEnd(last)
	}
	return out, false, a.observeHolders(ctx, out, keyPrefixes)
}

// lockKeyResource returns the resource a lock key belongs to and the
// prefix every key of that resource starts with. ok is false for a key
// that is no lock key of ours: no lease part, or a name that is no valid
// resource or that our escaping would not have written (two spellings of
// one resource would show it twice); its keyPrefix still lets a walk skip
// every key like it at once.
func lockKeyResource(key string) (resource, keyPrefix string, ok bool) {
	escaped, _, found := strings.Cut(strings.TrimPrefix(key, lockPrefix), "/")
	if !found {
		return "", key + "\x00", false // a prefix ending just past this key
	}
	keyPrefix = lockPrefix + escaped + "/"
	resource, err := url.PathUnescape(escaped)
	if err != nil || url.PathEscape(resource) != escaped || tokens.CheckResource(resource) != nil {
		return "", keyPrefix, false
	}
	return resource, keyPrefix, true
}

// observeHolders fills each state's holder, a few at a time: in a row, a
// page of resources would cost as many round trips.
func (a *Etcd) observeHolders(ctx context.Context, out []LockState, keyPrefixes []string) error {
	if len(out) == 0 {
		return nil
	}
	epochs, err := a.epochsAt(ctx)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, observeReads)
	errs := make([]error, len(out))
	for i := range out {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			errs[i] = a.observeHolder(ctx, &out[i], keyPrefixes[i], epochs)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// A holder's TTL is read best effort (0 when etcd does not answer):
	// past the deadline every one would read as 0, so that is an error.
	if err := ctx.Err(); err != nil {
		return unavailable("observe locks", err)
	}
	return nil
}

// observeHolder fills st's holder, the oldest of the keys under keyPrefix
// at st's revision, with its owner, and counts the others as waiting. Sorted, etcd reads
// every key of the range whatever the limit, so without their values;
// the holder's is read after.
func (a *Etcd) observeHolder(ctx context.Context, st *LockState, keyPrefix string, epochs func(rev int64) int64) error {
	resp, err := a.cli.Get(ctx, keyPrefix, clientv3.WithPrefix(), clientv3.WithRev(st.Revision), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1))
	if err != nil {
		return unavailable("observe lock", err)
	}
	if len(resp.Kvs) == 0 {
		// The walk found a key here at this very revision.
		return fmt.Errorf("authority: observe lock %s: no key at revision %d", st.Resource, st.Revision)
	}
	// The holder's key and its owner, in one read. A keys-only read
	// carries no lease ID: the key's last part names it.
	key := string(resp.Kvs[0].Key)
	id, _ := ParseLeaseID(strings.TrimPrefix(key, keyPrefix))
	owner := ownerKey(id)
	holder, err := reads(
		named("holder", clientv3.OpGet(key, clientv3.WithRev(st.Revision))),
		named("owner", clientv3.OpGet(owner, clientv3.WithRev(st.Revision))),
		named("transitions", clientv3.OpGet(transitionsKey(st.Resource), clientv3.WithRev(st.Revision), clientv3.WithKeysOnly())),
	).commit(ctx, a.cli)
	if err != nil {
		return unavailable("observe lock", err)
	}
	kvs := holder.kvs("holder")
	if len(kvs) == 0 {
		return fmt.Errorf("authority: observe lock %s: its holder's key is gone at revision %d", st.Resource, st.Revision)
	}
	c := a.contender(ctx, kvs[0], epochs, true)
	if owners := holder.kvs("owner"); len(owners) > 0 {
		c.Owner = string(owners[0].Value)
	}
	st.Holder, st.Waiting = &c, max(resp.Count-1, 0)
	st.Transitions = versionOf(holder.kvs("transitions"))
	return nil
}

// observeReads bounds the TTL reads ObserveAll has in flight at once.
const observeReads = 8

// add files c, the next oldest of a resource's contenders, as its holder
// or its next waiter.
func (st *LockState) add(c Contender) {
	if st.Holder == nil {
		st.Holder = &c
		return
	}
	st.Waiters = append(st.Waiters, c)
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

// versionOf is the etcd version of the key read into kvs (how often it
// was written since it was created), 0 if there is none.
func versionOf(kvs []*mvccpb.KeyValue) int64 {
	if len(kvs) == 0 {
		return 0
	}
	return kvs[0].Version
}

// checkValue bounds a lock key's value; it lives in etcd, not PostgreSQL.
func checkValue(v string) error {
	const maxValue = 4096
	if len(v) > maxValue || strings.ContainsRune(v, 0) {
		return ErrBadValue
	}
	return nil
}

package authority_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// lockSummary is one resource's lock as every key of it says.
type lockSummary struct {
	resource string
	holder   int64 // the oldest key's lease
	waiting  int64
}

// everyLock reads every key under the locks' prefix for prefix at once and
// summarises each resource's lock: what ObserveAll's walk must agree with.
func everyLock(t *testing.T, cli *clientv3.Client, prefix string) []lockSummary {
	t.Helper()
	resp, err := cli.Get(t.Context(), "/fencegw/locks/"+url.PathEscape(prefix), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	type lock struct {
		escaped             string
		oldest, lease, keys int64
	}
	var locks []*lock
	byName := map[string]*lock{}
	for _, kv := range resp.Kvs {
		escaped, _, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), "/fencegw/locks/"), "/")
		resource, err := url.PathUnescape(escaped)
		if !ok || err != nil || url.PathEscape(resource) != escaped || tokens.CheckResource(resource) != nil {
			continue
		}
		l := byName[resource]
		if l == nil {
			l = &lock{escaped: escaped, oldest: kv.CreateRevision, lease: kv.Lease}
			byName[resource] = l
			locks = append(locks, l)
		}
		l.keys++
		if kv.CreateRevision < l.oldest {
			l.oldest, l.lease = kv.CreateRevision, kv.Lease
		}
	}
	// In lock key order (the escaped name and "/"), as ObserveAll walks.
	slices.SortFunc(locks, func(a, b *lock) int { return strings.Compare(a.escaped+"/", b.escaped+"/") })
	var out []lockSummary
	for _, l := range locks {
		resource, _ := url.PathUnescape(l.escaped)
		out = append(out, lockSummary{resource, l.lease, l.keys - 1})
	}
	return out
}

// agreesWithEveryKey checks ObserveAll under prefix, at each limit,
// against everyLock.
func agreesWithEveryKey(t *testing.T, a *authority.Etcd, cli *clientv3.Client, prefix string, limits ...int) {
	t.Helper()
	want := everyLock(t, cli, prefix)
	for _, limit := range limits {
		got, truncated, err := a.ObserveAll(t.Context(), prefix, limit)
		if err != nil {
			t.Fatalf("ObserveAll(%q, %d): %v", prefix, limit, err)
		}
		n := min(limit, len(want))
		ok := truncated == (len(want) > limit) && len(got) == n
		for i := 0; ok && i < n; i++ {
			g := got[i]
			ok = g.Resource == want[i].resource && g.Holder != nil && int64(g.Holder.LeaseID) == want[i].holder && g.Waiting == want[i].waiting
		}
		if !ok {
			var gs []string
			for _, g := range got {
				gs = append(gs, fmt.Sprintf("%s+%d", g.Resource, g.Waiting))
			}
			t.Errorf("ObserveAll(%q, %d) = %v, truncated %t; every key says %+v", prefix, limit, gs, truncated, want[:n])
		}
	}
}

// grant is a lease that outlives the test, for its lock keys.
func grant(t *testing.T, cli *clientv3.Client) clientv3.LeaseID {
	t.Helper()
	l, err := cli.Grant(t.Context(), 600)
	if err != nil {
		t.Fatal(err)
	}
	return l.ID
}

// putKeys writes keys under lease, a hundred to a transaction.
func putKeys(t *testing.T, cli *clientv3.Client, lease clientv3.LeaseID, keys ...string) {
	t.Helper()
	for chunk := range slices.Chunk(keys, 100) {
		var ops []clientv3.Op
		for _, k := range chunk {
			ops = append(ops, clientv3.OpPut(k, "v", clientv3.WithLease(lease)))
		}
		if _, err := cli.Txn(t.Context()).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// lockKeys is n contenders' keys under an escaped resource name.
func lockKeys(escaped string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("/fencegw/locks/%s/%08x", escaped, i+1)
	}
	return keys
}

// TestObserveAllAgreesWithEveryKey: ObserveAll's walk, a page of keys at a
// time, reports what reading every key at once would, at every limit:
// pages that end at a resource's last key or inside it, a resource whose
// keys fill more than one page, keys that are no lock keys (with or
// without a lease part, alone or by hundreds) between resources, and
// random layouts of all of these.
func TestObserveAllAgreesWithEveryKey(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	l := grant(t, cli)
	a := authority.NewEtcd(cli, testenv.KEK())

	putKeys(t, cli, l, lockKeys("a%2F1", 256)...) // a page ends at its last key
	putKeys(t, cli, l, lockKeys("a%2F2", 5)...)
	putKeys(t, cli, l, lockKeys("a%2F3", 1)...)
	agreesWithEveryKey(t, a, cli, "a/", 1, 2, 3, 4, 100)

	putKeys(t, cli, l, lockKeys("b%2F1", 255)...)
	putKeys(t, cli, l, lockKeys("b%2F2", 300)...) // the first page's last resource, on two pages
	putKeys(t, cli, l, lockKeys("b%2F3", 2)...)
	agreesWithEveryKey(t, a, cli, "b/", 1, 2, 3, 4)

	putKeys(t, cli, l, lockKeys("c%2F1", 255)...)
	putKeys(t, cli, l, "/fencegw/locks/c%2F2") // no lease part, a page's last key, a prefix of the next name
	putKeys(t, cli, l, lockKeys("c%2F2", 3)...)
	agreesWithEveryKey(t, a, cli, "c/", 1, 2, 3)

	var stray []string
	for i := range 300 {
		stray = append(stray, fmt.Sprintf("/fencegw/locks/e%%2F1j%04d", i)) // no lease part
	}
	putKeys(t, cli, l, lockKeys("e%2F0", 1)...)
	putKeys(t, cli, l, stray...)
	putKeys(t, cli, l, lockKeys("e%2F2", 1)...)
	agreesWithEveryKey(t, a, cli, "e/", 1, 2, 3)

	putKeys(t, cli, l, lockKeys("f%2F0%20", 600)...) // "f/0 ": no resource, yet a page and more of keys
	putKeys(t, cli, l, lockKeys("f%2F1", 300)...)
	putKeys(t, cli, l, lockKeys("f%2F2", 300)...)
	agreesWithEveryKey(t, a, cli, "f/", 1, 2, 3)

	putKeys(t, cli, l, lockKeys("h%2F0%20", 300)...)
	putKeys(t, cli, l, lockKeys("h%2F1%20", 300)...)
	putKeys(t, cli, l, lockKeys("h%2F2", 300)...)
	putKeys(t, cli, l, lockKeys("h%2F3", 300)...)
	putKeys(t, cli, l, lockKeys("h%2F4", 1)...)
	agreesWithEveryKey(t, a, cli, "h/", 1, 2, 3, 4)

	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 2, 3, 255, 256, 257, 511, 512}
	for layout := range 6 {
		prefix := fmt.Sprintf("r%d/", layout)
		resources := 1 + rng.IntN(8)
		for i := range resources {
			escaped := url.PathEscape(fmt.Sprintf("%s%02d", prefix, i))
			putKeys(t, cli, l, lockKeys(escaped, sizes[rng.IntN(len(sizes))])...)
			switch rng.IntN(4) {
			case 0:
				putKeys(t, cli, l, "/fencegw/locks/"+escaped+"x") // no lease part
			case 1:
				putKeys(t, cli, l, "/fencegw/locks/"+escaped+"%7E/1") // "~", escaped as ours never is
			}
		}
		var limits []int
		for limit := 1; limit <= resources+1; limit++ {
			limits = append(limits, limit)
		}
		agreesWithEveryKey(t, a, cli, prefix, limits...)
	}
}

// TestObserveAllStopsAmongStrayKeys: pages of keys that are no lock keys
// end the walk after a few, as truncated, instead of letting stray keys
// make it read on and on.
func TestObserveAllStopsAmongStrayKeys(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	lease := grant(t, cli)
	var stray []string
	for i := range 5 * 256 {
		stray = append(stray, fmt.Sprintf("/fencegw/locks/s%%2F0stray%05d", i))
	}
	putKeys(t, cli, lease, stray...)
	putKeys(t, cli, lease, lockKeys("s%2F1", 1)...)
	got, truncated, err := authority.NewEtcd(cli, testenv.KEK()).ObserveAll(t.Context(), "s/", 10)
	if err != nil || !truncated || len(got) != 0 {
		t.Fatalf("ObserveAll past five pages of stray keys = %+v, %t, %v; want nothing, truncated", got, truncated, err)
	}
}

// compactingKV compacts etcd past the first read it serves, once, so the
// walk's reads at that revision find it gone.
type compactingKV struct {
	clientv3.KV
	cli       *clientv3.Client
	compacted atomic.Int64 // the revision compacted to
}

func (c *compactingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp, err := c.KV.Get(ctx, key, opts...)
	if err != nil || c.compacted.Load() != 0 {
		return resp, err
	}
	bump, err := c.KV.Put(ctx, "/test/bump", "x")
	if err != nil {
		return nil, err
	}
	if _, err := c.cli.Compact(ctx, bump.Header.Revision); err != nil {
		return nil, err
	}
	c.compacted.Store(bump.Header.Revision)
	return resp, nil
}

// TestObserveAllStartsAgainAfterACompaction: when etcd compacts the
// revision a walk pinned, under it, ObserveAll walks once more at a new
// revision instead of failing.
func TestObserveAllStartsAgainAfterACompaction(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	lease := grant(t, cli)
	putKeys(t, cli, lease, lockKeys("g%2F1", 3)...)
	putKeys(t, cli, lease, lockKeys("g%2F2", 1)...)
	kv := &compactingKV{KV: cli.KV, cli: cli}
	cli.KV = kv
	got, truncated, err := authority.NewEtcd(cli, testenv.KEK()).ObserveAll(t.Context(), "g/", 10)
	if err != nil || truncated || len(got) != 2 || got[0].Resource != "g/1" || got[0].Waiting != 2 || got[1].Resource != "g/2" {
		t.Fatalf("ObserveAll across a compaction = %+v, %t, %v; want g/1 with 2 waiting and g/2", got, truncated, err)
	}
	if c := kv.compacted.Load(); c == 0 || got[0].Revision < c {
		t.Fatalf("the walk read at revision %d, compacted to %d: it did not start again past the compaction", got[0].Revision, c)
	}
}

// countingKV counts the keys etcd returns to Get, to tell a walk that
// reads a page at a time from one that reads every key.
type countingKV struct {
	clientv3.KV
	keys atomic.Int64
}

func (c *countingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp, err := c.KV.Get(ctx, key, opts...)
	if err == nil {
		c.keys.Add(int64(len(resp.Kvs)))
	}
	return resp, err
}

// TestObserveAllWalksResourcesNotKeys: a resource with a line longer than
// a page is counted, not read (the keys etcd returns stay near a page),
// and does not crowd the next ones out; the holder is the oldest key, not
// the first by name, shown with its value and TTL; the limit counts
// resources, and below 1 is refused.
func TestObserveAllWalksResourcesNotKeys(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	const crowd = 1000
	crowdLease := grant(t, cli)
	putKeys(t, cli, crowdLease, lockKeys("walk%2Fcrowd", crowd)...)
	// walk/x: the holder's lease is the newer one, so its key sorts second
	// by name; it was created first.
	older, newer := grant(t, cli), grant(t, cli)
	if authority.LeaseID(older).String() >= authority.LeaseID(newer).String() {
		t.Fatalf("lease IDs %s and %s: the test needs the first granted to sort first", authority.LeaseID(older), authority.LeaseID(newer))
	}
	putKeys(t, cli, newer, "/fencegw/locks/walk%2Fx/"+authority.LeaseID(newer).String())
	putKeys(t, cli, older, "/fencegw/locks/walk%2Fx/"+authority.LeaseID(older).String())
	putKeys(t, cli, older, "/fencegw/locks/walk%2Fy/"+authority.LeaseID(older).String())
	kv := &countingKV{KV: cli.KV}
	cli.KV = kv
	a := authority.NewEtcd(cli, testenv.KEK())

	all, truncated, err := a.ObserveAll(t.Context(), "walk/", 10)
	if err != nil || truncated || len(all) != 3 {
		t.Fatalf("ObserveAll = %+v, %t, %v; want walk/crowd, walk/x, walk/y", all, truncated, err)
	}
	want := []struct {
		resource string
		holder   clientv3.LeaseID
		waiting  int64
	}{{"walk/crowd", crowdLease, crowd - 1}, {"walk/x", newer, 1}, {"walk/y", older, 0}}
	for i, w := range want {
		st := all[i]
		if st.Resource != w.resource || st.Holder == nil || st.Holder.LeaseID != authority.LeaseID(w.holder) ||
			st.Waiting != w.waiting || len(st.Waiters) != 0 || st.Holder.TTL <= 0 || st.Holder.Value != "v" {
			t.Errorf("resource %d: %+v (holder %+v); want %s held by %s with a TTL and its value, %d waiting",
				i, st, st.Holder, w.resource, authority.LeaseID(w.holder), w.waiting)
		}
	}
	// A page of keys, the next page's few, and one key or two per holder:
	// reading the crowd's 1,000 would be far more.
	if n := kv.keys.Load(); n > 2*256 {
		t.Errorf("ObserveAll read %d keys from etcd; want about a page, not the crowd's %d", n, crowd)
	}
	cut, truncated, err := a.ObserveAll(t.Context(), "walk/", 2)
	if err != nil || !truncated || len(cut) != 2 || cut[0].Resource != "walk/crowd" || cut[1].Resource != "walk/x" {
		t.Fatalf("ObserveAll with a limit of 2 = %+v, %t, %v; want walk/crowd and walk/x, truncated", cut, truncated, err)
	}
	if _, _, err := a.ObserveAll(t.Context(), "walk/", 0); err == nil {
		t.Error("ObserveAll with a limit of 0: no error")
	}
}

// cuttingLease ends the walk's context at its first TTL read, the one
// read ObserveAll makes best effort.
type cuttingLease struct {
	clientv3.Lease
	cancel context.CancelFunc
}

func (c cuttingLease) TimeToLive(ctx context.Context, id clientv3.LeaseID, opts ...clientv3.LeaseOption) (*clientv3.LeaseTimeToLiveResponse, error) {
	c.cancel()
	return c.Lease.TimeToLive(ctx, id, opts...)
}

// TestObserveAllSaysWhenItsTTLReadsWereCut: a context that ends while the
// holders' TTLs are read is ObserveAll's error, not TTLs of 0 shown as if
// every lease had just expired.
func TestObserveAllSaysWhenItsTTLReadsWereCut(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	lease := grant(t, cli)
	putKeys(t, cli, lease, lockKeys("ttl%2F1", 1)...)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cli.Lease = cuttingLease{Lease: cli.Lease, cancel: cancel}
	got, _, err := authority.NewEtcd(cli, testenv.KEK()).ObserveAll(ctx, "ttl/", 10)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, authority.ErrUnavailable) || got != nil {
		t.Fatalf("ObserveAll cut during its TTL reads = %+v, %v; want no locks and an unavailable error naming the cancellation", got, err)
	}
}

package authority_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/testenv"
)

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

// TestObserveAllWalksResourcesNotKeys: ObserveAll lists resources, not
// keys. A resource with a line longer than a page is counted, not read
// (the keys etcd returns stay near a page), and does not crowd the next
// ones out; the holder is the oldest key, not the first by name; keys
// that are no lock keys of ours (no lease part, a name our escaping would
// not write, an invalid resource) are skipped; the limit counts resources.
func TestObserveAllWalksResourcesNotKeys(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	ctx := t.Context()
	grant := func() clientv3.LeaseID {
		l, err := cli.Grant(ctx, 60)
		if err != nil {
			t.Fatal(err)
		}
		return l.ID
	}
	put := func(key string, lease clientv3.LeaseID) {
		t.Helper()
		if _, err := cli.Put(ctx, key, "v-"+key, clientv3.WithLease(lease)); err != nil {
			t.Fatal(err)
		}
	}
	const crowd = 1000
	crowdLease := grant()
	for i := 0; i < crowd; i += 100 {
		var ops []clientv3.Op
		for j := i; j < i+100; j++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/fencegw/locks/walk%%2Fcrowd/%08x", j), "v", clientv3.WithLease(crowdLease)))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	// walk/x: the holder's lease is the newer one, so its key sorts
	// second by name; it was created first.
	older, newer := grant(), grant()
	if authority.LeaseID(older).String() >= authority.LeaseID(newer).String() {
		t.Fatalf("lease IDs %s and %s: the test needs the first granted to sort first", authority.LeaseID(older), authority.LeaseID(newer))
	}
	put("/fencegw/locks/walk%2Fx/"+authority.LeaseID(newer).String(), newer)
	put("/fencegw/locks/walk%2Fx/"+authority.LeaseID(older).String(), older)
	put("/fencegw/locks/walk%2Fy/"+authority.LeaseID(older).String(), older)
	for _, junk := range []string{
		"/fencegw/locks/walk%2F0junk",    // no lease part
		"/fencegw/locks/walk%2F%61/x",    // walk/a, spelled as our escaping never would
		"/fencegw/locks/walk%2Fend%20/x", // walk/end : a resource may not end with a space
	} {
		put(junk, crowdLease)
	}
	kv := &countingKV{KV: cli.KV}
	cli.KV = kv
	a := authority.NewEtcd(cli)

	all, truncated, err := a.ObserveAll(ctx, "walk/", 10)
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
			st.Waiting != w.waiting || len(st.Waiters) != 0 || st.Holder.TTL <= 0 || st.Holder.Value == "" {
			t.Errorf("resource %d: %+v (holder %+v); want %s held by %s with a TTL and its value, %d waiting",
				i, st, st.Holder, w.resource, authority.LeaseID(w.holder), w.waiting)
		}
	}
	// A page of keys, the next page's few, and one key or two per holder:
	// reading the crowd's 1,000 would be far more.
	if n := kv.keys.Load(); n > 2*256 {
		t.Errorf("ObserveAll read %d keys from etcd; want about a page, not the crowd's %d", n, crowd)
	}

	cut, truncated, err := a.ObserveAll(ctx, "walk/", 2)
	if err != nil || !truncated || len(cut) != 2 || cut[0].Resource != "walk/crowd" || cut[1].Resource != "walk/x" {
		t.Fatalf("ObserveAll with a limit of 2 = %+v, %t, %v; want walk/crowd and walk/x, truncated", cut, truncated, err)
	}
	if _, _, err := a.ObserveAll(ctx, "walk/", 0); err == nil {
		t.Error("ObserveAll with a limit of 0: no error")
	}

	// Once the crowd's lease ends, its keys go with it.
	if _, err := cli.Revoke(ctx, crowdLease); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rest, truncated, err := a.ObserveAll(tctx, "walk/", 10)
	if err != nil || truncated || len(rest) != 2 || rest[0].Resource != "walk/x" || rest[1].Resource != "walk/y" {
		t.Fatalf("ObserveAll after the crowd left = %+v, %t, %v; want walk/x and walk/y", rest, truncated, err)
	}
}

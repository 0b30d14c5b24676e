package authority

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestPruneTransitionsSparesBusyLocks: a batch naming an idle lock, a lock
// with a key in line but no holder yet (a waiter first in line, sitting
// out a lock-delay) and a held lock fails as a whole, and one by one only
// the idle lock's key goes; as if each had been locked between the walk
// and the deletion.
func TestPruneTransitionsSparesBusyLocks(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	a := NewEtcd(cli, testenv.KEK())
	for _, r := range []string{"busy/idle", "busy/queued", "busy/held"} {
		l, err := a.Acquire(t.Context(), r, AcquireOptions{TTL: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if r == "busy/held" {
			defer a.Release(t.Context(), l.ID, "")
			continue
		}
		if err := a.Release(t.Context(), l.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	grant, err := cli.Grant(t.Context(), 30)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Revoke(t.Context(), grant.ID)
	queued := lockKeyPrefix("busy/queued") + LeaseID(grant.ID).String()
	if _, err := cli.Put(t.Context(), queued, "", clientv3.WithLease(grant.ID)); err != nil {
		t.Fatal(err)
	}

	n, err := a.pruneIdleTransitions(t.Context(), []string{"busy/idle", "busy/queued", "busy/held"})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("pruned %d, want the idle lock's key only", n)
	}
	for r, want := range map[string]int64{"busy/idle": 0, "busy/queued": 1, "busy/held": 1} {
		resp, err := cli.Get(t.Context(), transitionsKey(r), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count != want {
			t.Errorf("%s: %d transitions keys after the prune, want %d", r, resp.Count, want)
		}
	}
}

package authority_test

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestPruneTransitions: after grants and releases on many resources, a
// prune deletes the transitions keys of the idle ones (more than one
// deleting transaction's worth) and keeps a held lock's; a new grant on a
// pruned resource works, with a token above the old one, and counts from
// 1 again.
func TestPruneTransitions(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t) // every key of the prefix counted: no other test's
	a := authority.NewEtcd(cli, testenv.KEK())
	const idle = 70
	var first authority.Lease
	for i := range idle {
		for range 2 {
			l, err := a.Acquire(t.Context(), fmt.Sprintf("churn/r-%d", i), authority.AcquireOptions{TTL: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 && first.ID == 0 {
				first = l
			}
			if err := a.Release(t.Context(), l.ID, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	held, err := a.Acquire(t.Context(), "churn/held", authority.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(t.Context(), held.ID, "")
	if n := heldKeys(t, cli); n != idle+2 {
		t.Fatalf("before the prune: %d keys under /fencegw/held/, want %d transitions keys and the held lock's two", n, idle)
	}

	pruned, err := a.PruneTransitions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if pruned != idle {
		t.Fatalf("pruned %d, want the %d idle locks' keys", pruned, idle)
	}
	if n := heldKeys(t, cli); n != 2 {
		t.Fatalf("after the prune: %d keys under /fencegw/held/, want the held lock's two", n)
	}
	if st := observe(t, a, "churn/held"); st.Transitions != 1 || st.Holder == nil || st.Holder.Token != held.Token.Unsigned() {
		t.Fatalf("the held lock after the prune: %+v, want its holder and 1 transition", st)
	}
	if st := observe(t, a, "churn/r-0"); st.Transitions != 0 {
		t.Fatalf("a pruned lock: %d transitions, want 0", st.Transitions)
	}
	if again, err := a.PruneTransitions(t.Context()); err != nil || again != 0 {
		t.Fatalf("a second prune: %d, %v; want nothing left to prune", again, err)
	}

	next, err := a.Acquire(t.Context(), "churn/r-0", authority.AcquireOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(t.Context(), next.ID, "")
	if first.Token.Compare(next.Token) >= 0 {
		t.Fatalf("the grant after the prune has token %s, want one above the first's %s", next.Token.Unsigned(), first.Token.Unsigned())
	}
	if st := observe(t, a, "churn/r-0"); st.Transitions != 1 {
		t.Fatalf("the grant after the prune: %d transitions, want 1 (counting again)", st.Transitions)
	}
}

func observe(t *testing.T, a *authority.Etcd, resource string) authority.LockState {
	t.Helper()
	st, err := a.Observe(t.Context(), resource)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func heldKeys(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	resp, err := cli.Get(t.Context(), "/fencegw/held/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

package authority

import (
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testenv"
)

// TestWaitDeleteSurvivesCompaction: when the revision a waiter watches from
// has been compacted away, waitDelete returns so that the caller reads the
// predecessors again, instead of failing the wait with 503.
func TestWaitDeleteSurvivesCompaction(t *testing.T) {
	cli := testenv.EtcdClient(t)
	a := NewEtcd(cli)
	key := "/fencegw-test/compacted/" + t.Name()
	put, err := cli.Put(t.Context(), key, "held")
	if err != nil {
		t.Fatal(err)
	}
	later, err := cli.Put(t.Context(), key+"/other", "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(t.Context(), later.Header.Revision); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.waitDelete(t.Context(), key, put.Header.Revision) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("waitDelete from a compacted revision: %v, want nil (read again)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waitDelete from a compacted revision did not return")
	}
}

func TestLockKeyPrefixSeparatesNestedResources(t *testing.T) {
	// If "a" and "a/b" shared a prefix, a holder of "a/b" would count as a
	// contender for "a" and break mutual exclusion.
	a, ab := lockKeyPrefix("a"), lockKeyPrefix("a/b")
	if len(ab) >= len(a) && ab[:len(a)] == a {
		t.Fatalf("lock prefix %q is a prefix of %q", a, ab)
	}
}

package authority

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestWaitDeleteSurvivesCompaction: when the revision a waiter watches from
// has been compacted away, waitDelete returns so that the caller reads the
// predecessors again, instead of failing the wait with 503.
func TestWaitDeleteSurvivesCompaction(t *testing.T) {
	cli := testenv.EtcdClient(t)
	a := NewEtcd(cli, testenv.KEK())
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

// TestReadStoreSizeSkipsADeadEndpoint: with the first endpoint down and
// another up, the status read (part of every guard check) succeeds within
// a guard check's time; etcd's client waits on a dead endpoint until the
// context ends, so asking the endpoints in turn would not. With none up it
// fails as unavailable, naming the endpoint.
func TestReadStoreSizeSkipsADeadEndpoint(t *testing.T) {
	const dead = "127.0.0.1:1" // nothing listens there
	a := NewEtcd(testenv.NewEtcdClient(t, append([]string{dead}, testenv.EtcdEndpoints()...)), testenv.KEK())
	ctx, cancel := context.WithTimeout(t.Context(), DefaultCheckEvery)
	defer cancel()
	if err := a.ReadStoreSize(ctx); err != nil {
		t.Fatalf("dead endpoint first, then a live one, within %v: %v", DefaultCheckEvery, err)
	}
	if a.StoreSize().Total <= 0 {
		t.Fatalf("store size = %+v, want the live member's", a.StoreSize())
	}
	ctx, cancel = context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	err := NewEtcd(testenv.NewEtcdClient(t, []string{dead}), testenv.KEK()).ReadStoreSize(ctx)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), dead) {
		t.Fatalf("only a dead endpoint: %v, want unavailable naming %s", err, dead)
	}
}

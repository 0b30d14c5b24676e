package authority

import (
	"context"
	"errors"
	"fmt"
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

// TestWaitGone: a waiter told its predecessor is gone whether it went
// before the wait's watch was in place (the read after it shows it) or
// after (the watch's event), and not while it stays; a wait given up ends
// with its context's error.
func TestWaitGone(t *testing.T) {
	cli := testenv.EtcdClient(t)
	a := NewEtcd(cli, testenv.KEK())
	key := fmt.Sprintf("/fencegw-test/gone/%s/%d", t.Name(), time.Now().UnixNano()) // the package's etcd is shared, and -count runs again
	t.Cleanup(func() { _, _ = cli.Delete(context.Background(), key) })

	if err := a.waitGone(t.Context(), key); err != nil {
		t.Fatalf("a key that never was: %v", err)
	}
	if _, err := cli.Put(t.Context(), key, "held"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.waitGone(ctx, key) }()
	// Not told while the key stays: another key's deletion, and a put of
	// its own, end nothing.
	if _, err := cli.Put(t.Context(), key, "again"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(t.Context(), key+"/other"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("returned %v while the key stays", err)
	default:
	}
	if _, err := cli.Delete(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the key deleted: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not told of the deletion")
	}
	cancel()

	if _, err := cli.Put(t.Context(), key, "held"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	if err := a.waitGone(ctx, key); !errors.Is(err, context.Canceled) {
		t.Fatalf("a wait given up: %v, want context.Canceled", err)
	}
}

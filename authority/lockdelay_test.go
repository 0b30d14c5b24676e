package authority

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// skewed is an authority on cli whose wall clock is off by offset.
func skewed(cli *clientv3.Client, offset time.Duration) *Etcd {
	a := NewEtcd(cli, testenv.KEK())
	a.now = func() time.Time { return time.Now().Add(offset) }
	return a
}

// awaitExpiry returns when etcd deletes lease id's lock key on resource:
// the holder's lease expired.
func awaitExpiry(t *testing.T, cli *clientv3.Client, resource string, id LeaseID) time.Time {
	t.Helper()
	key := lockKeyPrefix(resource) + id.String()
	resp, err := cli.Get(t.Context(), key)
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("the holder's lock key: %v, %d keys", err, len(resp.Kvs))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	a := NewEtcd(cli, testenv.KEK())
	if err := a.waitDelete(ctx, key, resp.Header.Revision+1); err != nil {
		t.Fatalf("the holder's lease never expired: %v", err)
	}
	return time.Now()
}

// TestLockDelayOnEtcdsClock: the lock-delay holds as configured between
// replicas whose wall clocks disagree by far more than the delay, in both
// directions. A holder on one replica lets its lease expire; a try on a
// second replica is refused in lock-delay; a wait on a third is granted,
// no sooner than the delay after the expiry (and within its wait, not
// hours later). When the delay's end was wall-clock time written by one
// replica and read by another, the replica an hour behind granted at once
// and the one an hour ahead refused for two hours.
func TestLockDelayOnEtcdsClock(t *testing.T) {
	const delay = 3 * time.Second
	skew := time.Hour
	for _, tt := range []struct {
		name            string
		holder, try, at time.Duration // each replica's clock offset
	}{
		{"the waiter's clock ahead", 0, -skew, skew},
		{"the waiter's clock behind", 0, skew, -skew},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cli := testenv.EtcdClient(t)
			holder, try, waiter := skewed(cli, tt.holder), skewed(cli, tt.try), skewed(cli, tt.at)
			res := "delay-skew/" + t.Name()
			opts := AcquireOptions{TTL: time.Second, LockDelay: delay, Owner: "billing"}
			l, err := holder.Acquire(t.Context(), res, opts)
			if err != nil {
				t.Fatal(err)
			}
			expired := awaitExpiry(t, cli, res, l.ID)

			opts.TTL = 5 * time.Second
			if _, err := try.Acquire(t.Context(), res, opts); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "lock-delay") {
				t.Fatalf("a try right after the expiry = %v, want ErrLocked in lock-delay", err)
			}
			opts.Wait = 30 * time.Second
			next, err := waiter.Acquire(t.Context(), res, opts)
			if err != nil {
				t.Fatalf("a wait of %s past a lock-delay of %s = %v, want granted", opts.Wait, delay, err)
			}
			if waited := time.Since(expired); waited < delay {
				t.Fatalf("granted %s after the holder's lease expired, want at least the lock-delay %s", waited, delay)
			}
			if err := waiter.Release(t.Context(), next.ID, "billing"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLockDelayKeysEndWithTheirPurpose: 500 leases on resources with a
// lock-delay, released, expired, renewed or abandoned, leave nothing in
// etcd once their delays have passed: every key fencegw wrote for them is
// attached to an etcd lease. (The last-holder record of an expired lease
// used to stay for good.)
func TestLockDelayKeysEndWithTheirPurpose(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	a := NewEtcd(cli, testenv.KEK())
	ctx := t.Context()
	opts := AcquireOptions{TTL: time.Second, LockDelay: time.Second, Owner: "churn", Observer: "replica-1"}
	warm, err := a.Acquire(ctx, "churn/warm-up", opts) // creates the signing key, the epoch
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, warm.ID, "churn"); err != nil {
		t.Fatal(err)
	}
	// Each resource ever locked keeps its count of transitions, as it
	// keeps its fence row: counted apart (heldKeys).
	count := func() int64 {
		resp, err := cli.Get(ctx, "/fencegw/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Count - heldKeys(t, cli)
	}
	baseline := count()

	const leases, workers = 500, 10
	var wg sync.WaitGroup
	var locked sync.Map // the resources granted at least once, warm-up aside
	errs := make(chan error, leases)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < leases; i += workers {
				res := fmt.Sprintf("churn/%d", i%250) // two holders in turn on each
				o := opts
				o.Wait = time.Minute
				l, err := a.Acquire(ctx, res, o)
				if errors.Is(err, ErrLeaseNotFound) {
					continue // expired before its grant was recorded: on a loaded machine, a second passes quickly
				}
				if err != nil {
					errs <- fmt.Errorf("acquire %s: %w", res, err)
					continue
				}
				locked.Store(res, true)
				switch i % 4 {
				case 0:
					err = a.Release(ctx, l.ID, "churn")
				case 1:
					_, err = a.KeepAlive(ctx, l.ID, "churn") // then expires
				case 2:
					a.Abandon(ctx, l.ID, "churn")
				} // 3: expires
				// A one-second lease may expire before its holder gets to
				// release or renew it on a busy machine: an end all the same.
				if err != nil && !errors.Is(err, ErrLeaseNotFound) {
					errs <- fmt.Errorf("lease %d: %w", i, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if during := count(); during <= baseline {
		t.Fatalf("%d keys under /fencegw/ right after the churn, baseline %d: the expired holders' last-holder records should still be there", during, baseline)
	}
	var last int64
	if !testenv.WaitFor(time.Minute, func() bool { last = count(); return last == baseline }) {
		t.Fatalf("%d keys under /fencegw/ a minute after the churn, want the baseline %d", last, baseline)
	}
	// What stays is one count of transitions per resource locked: every
	// resource granted, and none but a resource's count.
	resp, err := cli.Get(ctx, "/fencegw/held/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	counted := map[string]bool{}
	for _, kv := range resp.Kvs {
		if !strings.HasSuffix(string(kv.Key), "/"+transitionsName) {
			t.Errorf("%s stays under /fencegw/held/, want only counts of transitions", kv.Key)
		}
		counted[string(kv.Key)] = true
	}
	locked.Range(func(res, _ any) bool {
		if !counted[transitionsKey(res.(string))] {
			t.Errorf("%s was granted and has no count of transitions", res)
		}
		return true
	})
}

// heldKeys counts the keys under /fencegw/held/: the holders' records and
// each resource's count of transitions.
func heldKeys(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	resp, err := cli.Get(t.Context(), "/fencegw/held/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

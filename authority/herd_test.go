package authority_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// rangeCounter counts the reads of ranges of etcd keys under prefix that
// pass through one client: a waiter reads its predecessors once per
// wake-up, so the count says how many waiters a change woke.
type rangeCounter struct {
	prefix string
	n      atomic.Int64
}

func (c *rangeCounter) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	// A read of the queue is a range; a read of one key (a waiter's look
	// at its predecessor once its watch is in place) is not.
	if r, ok := req.(*pb.RangeRequest); ok && strings.HasPrefix(string(r.Key), c.prefix) && len(r.RangeEnd) > 0 {
		c.n.Add(1)
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// TestReleaseWakesOneWaiter: the herd effect of the chapter's 9.8. With
// eight waiters queued behind a holder, each watches only the key just
// before its own, so a release wakes the next waiter alone: one read of
// the queue per release, not one per waiter. A queue where every waiter
// watched the holder would read it eight times on the first release.
func TestReleaseWakesOneWaiter(t *testing.T) {
	const waiters = 8
	// Unescaped in the lock key, and the test's own on every run.
	res := fmt.Sprintf("herd-%d", time.Now().UnixNano())
	counter := &rangeCounter{prefix: "/fencegw/locks/" + res + "/"}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   testenv.EtcdEndpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(counter.intercept)},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	a := authority.NewEtcd(cli, testenv.KEK())

	holder, err := a.Acquire(t.Context(), res, authority.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan authority.Lease, waiters)
	for range waiters {
		go func() {
			l, err := a.Acquire(context.Background(), res, authority.AcquireOptions{TTL: 10 * time.Second, Wait: time.Minute})
			if err != nil {
				t.Errorf("waiter: %v", err)
			}
			granted <- l
		}()
	}
	// Every waiter has read the queue once and settled on the key before
	// its own.
	if !testenv.WaitFor(20*time.Second, func() bool { return counter.n.Load() >= waiters }) {
		t.Fatalf("waiters read the queue %d times, want %d", counter.n.Load(), waiters)
	}
	settled := counter.n.Load()
	if settled != waiters {
		t.Fatalf("queueing read the queue %d times, want one per waiter (%d)", settled, waiters)
	}

	prev := holder
	for i := range 3 {
		if err := a.Release(t.Context(), prev.ID, ""); err != nil {
			t.Fatal(err)
		}
		next := <-granted
		// The next waiter read the queue once more, and nobody else did:
		// a second reader would be a waiter woken for nothing.
		if got, want := counter.n.Load(), settled+int64(i+1); got != want {
			t.Fatalf("release %d: the queue was read %d times in all, want %d (one wake-up per release)", i+1, got, want)
		}
		if next.Token.Compare(prev.Token) <= 0 {
			t.Fatalf("release %d: granted token %s is not newer than %s", i+1, next.Token, prev.Token)
		}
		prev = next
	}
	// Hand the lock down the rest of the queue so no goroutine outlives
	// the test.
	for range waiters - 3 {
		if err := a.Release(t.Context(), prev.ID, ""); err != nil {
			t.Fatal(err)
		}
		prev = <-granted
	}
	if err := a.Release(t.Context(), prev.ID, ""); err != nil {
		t.Fatal(err)
	}
}

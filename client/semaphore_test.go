package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
)

// semaphorePolicy is the demo policy with pool/{pool}, a semaphore of 2
// permits whose work is logged under the permit's slot.
func semaphorePolicy(t *testing.T) string {
	t.Helper()
	return strings.Replace(demoPolicy(t), "operations:\n", `  pool:
    template: "pool/{pool}"
    permits: 2

operations:
  work:
    resource: pool
    args:
      pool: {type: string, max_length: 32}
    statements:
      - sql: |
          INSERT INTO demo.write_log (resource, epoch, revision, operation, account, amount_cents)
          VALUES (:_resource, :_epoch, :_revision, 'work', :pool, 0)
`, 1)
}

// TestSemaphorePermits: the client takes permits of a semaphore like
// locks, and each writes as a lock's holder would: its token names its
// slot, and the write is fenced there.
func TestSemaphorePermits(t *testing.T) {
	c := client.New(newGateway(t, semaphorePolicy(t)))
	ctx := context.Background()
	opts := client.AcquireOptions{TTL: 10 * time.Second, Permits: 2}
	a, err := c.Acquire(ctx, "pool/p1", opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Acquire(ctx, "pool/p1", opts)
	if err != nil {
		t.Fatal(err)
	}
	if a.Permit() == b.Permit() || a.Permits() != 2 || b.Permits() != 2 {
		t.Fatalf("permits %d and %d of %d/%d: want slots 1 and 2 of 2", a.Permit(), b.Permit(), a.Permits(), b.Permits())
	}
	for _, l := range []*client.Lease{a, b} {
		res, err := l.Write(ctx, "work", map[string]any{"pool": "p1"})
		if err != nil {
			t.Fatalf("permit %d's write: %v", l.Permit(), err)
		}
		if res.Resource != l.Resource() || !strings.HasPrefix(l.Resource(), "pool/p1#") || res.Token != client.Unsigned(l.Token()) {
			t.Errorf("permit %d's write result %+v; want it fenced under %s", l.Permit(), res, l.Resource())
		}
	}
	var locked *client.LockedError
	if _, err := c.Acquire(ctx, "pool/p1", opts); !errors.As(err, &locked) || !strings.Contains(locked.Problem.Detail, "all 2 permits are held") {
		t.Fatalf("a third permit without a wait: %v; want a LockedError, all 2 permits held", err)
	}
	granted := make(chan *client.Lease, 1)
	go func() {
		l, err := c.Acquire(ctx, "pool/p1", client.AcquireOptions{TTL: 10 * time.Second, Wait: 30 * time.Second, Permits: 2})
		if err != nil {
			t.Error(err)
		}
		granted <- l
	}()
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	third := <-granted
	if third == nil || third.Permit() != a.Permit() {
		t.Fatalf("the third got %v, want slot %d", third, a.Permit())
	}
	for _, l := range []*client.Lease{b, third} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSemaphorePermitsMismatch: a client that takes the resource for a
// semaphore of another size is refused, not granted something else.
func TestSemaphorePermitsMismatch(t *testing.T) {
	c := client.New(newGateway(t, semaphorePolicy(t)))
	ctx := context.Background()
	for _, tt := range []struct {
		resource string
		permits  int
		msg      string
	}{
		{"pool/p2", 3, "pool/p2 is a semaphore of 2 permits in the policy"},
		{"account/acct-1", 2, "account/acct-1 is an exclusive lock"},
	} {
		_, err := c.Acquire(ctx, tt.resource, client.AcquireOptions{TTL: 5 * time.Second, Permits: tt.permits})
		var pe *client.ProblemError
		if !errors.As(err, &pe) || pe.Status != 400 || !strings.Contains(pe.Detail, tt.msg) {
			t.Errorf("Acquire %s with %d permits: %v; want 400 with %q", tt.resource, tt.permits, err, tt.msg)
		}
	}
	if _, err := c.Acquire(ctx, "pool/p2", client.AcquireOptions{Permits: -1}); !errors.Is(err, client.ErrBadOptions) {
		t.Errorf("Acquire with -1 permits: %v, want ErrBadOptions", err)
	}
}

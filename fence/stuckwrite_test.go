package fence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/timeout"
)

// TestAStuckWriteEndsAtItsDeadline: a write whose fence row another
// transaction holds, with no lock_timeout to end its wait, ends at its
// context's deadline: its outcome unknown, since its commit was sent, and
// its statement cancelled on the server, which rolls it back. So whether
// pgx watches the context (one of the write's own) or the connection's
// deadline stands in for it (a deadline shared with other writes).
func TestAStuckWriteEndsAtItsDeadline(t *testing.T) {
	const ttl = time.Second
	for _, tc := range []struct {
		name string
		ctx  func(t *testing.T) context.Context
	}{
		{"its own deadline", func(t *testing.T) context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), ttl)
			t.Cleanup(cancel)
			return ctx
		}},
		{"a shared deadline", func(*testing.T) context.Context { return timeout.New(ttl).Context() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDB(t)
			st := storeWithLockTimeout(t, d, 2, "0", fence.Config{})
			ctx := context.Background()
			if _, err := st.Apply(ctx, mustRequest(t, credit(d, "acct-85", 1))); err != nil { // the fence row exists from here on
				t.Fatal(err)
			}
			unlock := testenv.LockFenceRow(t, d.pool, "account/acct-85")
			before := d.state()
			_, err := st.Apply(tc.ctx(t), mustRequest(t, credit(d, "acct-85", 2)))
			if !errors.Is(err, fence.ErrUnavailable) || !errors.Is(err, fence.ErrOutcomeUnknown) {
				t.Fatalf("a write stuck past its deadline: %v, want unavailable, outcome unknown", err)
			}
			waitFor(t, "the stuck statement to be cancelled on the server", func() bool {
				return testenv.LockWaiters(d.pool, "%fencegw.fence%") == 0
			})
			unlock()
			if after := d.state(); after != before {
				t.Fatal("the stuck write changed the state once the fence row was free")
			}
			if _, err := st.Apply(ctx, mustRequest(t, credit(d, "acct-85", 3))); err != nil {
				t.Fatalf("the next write: %v", err)
			}
		})
	}
}

package timeout_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/timeout"
)

type key struct{}

// TestContextIsDoneAtItsDeadlineOnly: a Context has its values' context's
// values, is not done when that context is, and is done at a deadline no
// earlier than its timeout and no later than its slack after that.
func TestContextIsDoneAtItsDeadlineOnly(t *testing.T) {
	const ttl = 200 * time.Millisecond
	s := timeout.New(ttl)
	values, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	start := time.Now()
	var c timeout.Context
	s.Bind(&c, values)
	end := time.Now()
	cancel()
	if got := c.Value(key{}); got != "v" {
		t.Errorf("Value = %v, want the values' context's v", got)
	}
	if c.Err() != nil {
		t.Fatalf("Err = %v once its values' context is cancelled, want nil: only its deadline ends it", c.Err())
	}
	deadline, ok := c.Deadline()
	if !ok || deadline.Before(start.Add(ttl)) || deadline.After(end.Add(ttl+ttl/100)) {
		t.Fatalf("deadline %v after Bind, want between %v and %v", deadline.Sub(start), ttl, ttl+ttl/100)
	}
	select {
	case <-c.Done():
	case <-time.After(time.Minute):
		t.Fatal("not done a minute after its deadline")
	}
	if time.Now().Before(deadline) {
		t.Fatal("done before its deadline")
	}
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err = %v, want DeadlineExceeded", c.Err())
	}
}

// TestDerivedContextsJoinTheSharedDeadline: a context derived from a
// Context is cancelled with the shared deadline, and so is a function
// registered with context.AfterFunc.
func TestDerivedContextsJoinTheSharedDeadline(t *testing.T) {
	s := timeout.New(50 * time.Millisecond)
	var c timeout.Context
	s.Bind(&c, context.Background())
	child, stop := context.WithCancel(&c)
	defer stop()
	ran := make(chan struct{})
	context.AfterFunc(&c, func() { close(ran) })
	for _, done := range []<-chan struct{}{child.Done(), ran} {
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("a derived context or an AfterFunc not done a minute after the deadline")
		}
	}
	if !errors.Is(context.Cause(child), context.DeadlineExceeded) {
		t.Fatalf("the child's cause %v, want DeadlineExceeded", context.Cause(child))
	}
}

// TestWatchingAContextStartsNoGoroutine: what pgx does with a context it
// must watch (context.AfterFunc) joins the shared deadline's own
// cancellation, as it would a context.WithTimeout's, rather than starting
// a goroutine to wait on a context the context package does not know.
func TestWatchingAContextStartsNoGoroutine(t *testing.T) {
	s := timeout.New(time.Hour)
	var c timeout.Context
	s.Bind(&c, context.Background())
	before := runtime.NumGoroutine()
	const watches = 100
	for range watches {
		stop := context.AfterFunc(&c, func() {})
		defer stop()
	}
	if grew := runtime.NumGoroutine() - before; grew >= watches {
		t.Fatalf("%d watches started %d goroutines", watches, grew)
	}
}

// TestDoneOnlyAt: a Shared's contexts, and those derived from them with
// no cancellation of their own, are done only at their deadline; any
// other context must be watched.
func TestDoneOnlyAt(t *testing.T) {
	s := timeout.New(time.Hour)
	var c timeout.Context
	s.Bind(&c, context.Background())
	withCancel, stop := context.WithCancel(&c)
	defer stop()
	earlier, stopEarlier := context.WithTimeout(&c, time.Minute)
	defer stopEarlier()
	own, stopOwn := context.WithTimeout(context.Background(), time.Hour)
	defer stopOwn()
	want, _ := c.Deadline()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		ok   bool
	}{
		{"a bound Context", &c, true},
		{"a Shared's Context()", s.Context(), true},
		{"a value over a Context", context.WithValue(&c, key{}, 1), true},
		{"a cancellation over a Context", withCancel, false},
		{"an earlier deadline over a Context", earlier, false},
		{"no cancellation over a Context", context.WithoutCancel(&c), false},
		{"a context of its own", own, false},
		{"Background", context.Background(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := timeout.DoneOnlyAt(tc.ctx)
			if ok != tc.ok || (ok && !got.Equal(want)) {
				t.Fatalf("DoneOnlyAt = %v, %v; want %v, %v", got, ok, want, tc.ok)
			}
		})
	}
}

// TestOneDeadlineForCallsThatStartTogether: calls that start within one
// slack share one deadline, and binding one allocates nothing.
func TestOneDeadlineForCallsThatStartTogether(t *testing.T) {
	s := timeout.New(time.Hour) // a slack of 36 s: every Bind below falls in one
	var a, b timeout.Context
	s.Bind(&a, context.Background())
	s.Bind(&b, context.Background())
	if a.Done() != b.Done() {
		t.Fatal("two calls a moment apart got two deadlines")
	}
	values := context.WithValue(context.Background(), key{}, 1)
	if n := testing.AllocsPerRun(100, func() { s.Bind(&a, values) }); n != 0 {
		t.Fatalf("Bind allocated %v times, want 0", n)
	}
}

// Package timeout gives the calls that start within a short span one
// deadline between them: one timer and one channel for all of them,
// instead of a context.WithTimeout each, and a context a blocking call
// can recognise as done at its deadline and at no other time, so that it
// may enforce that deadline some other way (a connection's own deadline)
// instead of watching the context. It imports nothing of fencegw.
package timeout

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Shared hands out deadlines a fixed timeout from now, give or take a
// slack of a hundredth of it: the calls that start within one slack share
// one deadline, and its context. A call's deadline is therefore its
// timeout, or up to a hundredth more, never less.
type Shared struct {
	timeout, slack time.Duration
	mu             sync.Mutex // held while a window is made
	current        atomic.Pointer[window]
}

// New returns a Shared whose deadlines are timeout from now.
func New(timeout time.Duration) *Shared {
	return &Shared{timeout: timeout, slack: timeout / 100}
}

// window is the deadline shared by the calls that start within one slack.
type window struct {
	deadline time.Time
	// ctx is done at deadline and at no other time, and answers
	// windowKey with the window. It has no values of its own.
	ctx context.Context
	// stop is never called: ctx must be done at its deadline and at no
	// other time. Its timer lets it go then.
	stop context.CancelFunc
}

type windowKey struct{}

// Context returns a context with no values, done a timeout from now (see
// Shared) and at no other time.
func (s *Shared) Context() context.Context { return s.window().ctx }

// window returns the current window, or a new one if the current one
// would leave a call that starts now less than its timeout.
func (s *Shared) window() *window {
	now := time.Now()
	if w := s.current.Load(); w != nil && w.deadline.Sub(now) >= s.timeout {
		return w
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now = time.Now() // after the wait for the lock, which a deadline must not lose
	if w := s.current.Load(); w != nil && w.deadline.Sub(now) >= s.timeout {
		return w
	}
	w := &window{deadline: now.Add(s.timeout + s.slack)}
	ctx, stop := context.WithDeadline(context.Background(), w.deadline)
	w.ctx, w.stop = context.WithValue(ctx, windowKey{}, w), stop
	s.current.Store(w)
	return w
}

// Context is a context with the values of one context and a deadline of
// a Shared's: done at that deadline and at no other time, not when the
// values' context is. It is a struct to be kept inside an allocation its
// caller makes anyway (Bind fills it), which is the point: it costs no
// allocation of its own.
type Context struct {
	values context.Context
	w      *window
}

// Bind makes c a context with the values of values and a deadline of s's
// from now.
func (s *Shared) Bind(c *Context, values context.Context) {
	c.values, c.w = values, s.window()
}

// Deadline is the shared deadline.
func (c *Context) Deadline() (time.Time, bool) { return c.w.deadline, true }

// Done is closed at the shared deadline.
func (c *Context) Done() <-chan struct{} { return c.w.ctx.Done() }

// Err is context.DeadlineExceeded once the shared deadline has passed.
func (c *Context) Err() error { return c.w.ctx.Err() }

// Value answers the keys of the values' context, but first the shared
// deadline's own (the window's, and the context package's key, through
// which a context derived from c, pgx's watch of it say, joins the
// shared deadline's children instead of starting a goroutine to wait).
func (c *Context) Value(key any) any {
	if v := c.w.ctx.Value(key); v != nil {
		return v
	}
	return c.values.Value(key)
}

// DoneOnlyAt returns ctx's deadline if ctx is done at it and at no other
// time: a Shared's context, or one derived from it that adds no
// cancellation of its own (context.WithValue). A caller that can enforce
// the deadline another way may then give a blocking call a context that
// needs no watching. Anything else, ok false: ctx must be watched.
func DoneOnlyAt(ctx context.Context) (deadline time.Time, ok bool) {
	w, ok := ctx.Value(windowKey{}).(*window)
	if !ok || ctx.Done() != w.ctx.Done() {
		return time.Time{}, false
	}
	return w.deadline, true
}

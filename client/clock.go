package client

import (
	"context"
	"time"
)

// Clock is the time source of a Client's leases: their local deadlines,
// keepalive schedule and expiry. Tests pass a fake to control time instead
// of sleeping.
type Clock interface {
	// Now returns the current time. The real clock's readings carry the
	// monotonic clock, so deadlines do not move with wall-clock steps.
	Now() time.Time
	// AfterFunc arranges for f to be called once d has passed, never from
	// within AfterFunc itself, whatever d: callers hold locks f takes.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending call of Clock.AfterFunc. *time.Timer is one.
type Timer interface {
	// Stop prevents the call if it has not started and reports whether it
	// did.
	Stop() bool
}

// SystemClock is the real clock: time.Now and time.AfterFunc.
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time                            { return time.Now() }
func (systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// sleep waits d on c, or until ctx ends.
func sleep(ctx context.Context, c Clock, d time.Duration) error {
	woke := make(chan struct{})
	t := c.AfterFunc(d, func() { close(woke) })
	select {
	case <-woke:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

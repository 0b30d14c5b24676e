package client_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// fakeClock is a client.Clock that moves only when the test says.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	clk *fakeClock
	at  time.Time
	f   func()
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 10, 18, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc calls f in the Advance that reaches its time; like
// time.AfterFunc, a call that is due already runs in a goroutine at once.
func (c *fakeClock) AfterFunc(d time.Duration, f func()) client.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clk: c, at: c.now.Add(d), f: f}
	if d <= 0 {
		go f()
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	c := t.clk
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.timers, t)
	if i < 0 {
		return false
	}
	c.timers = slices.Delete(c.timers, i, i+1)
	return true
}

// Advance moves the clock d forward, running the timers that come due in
// order of their time, each with the clock at that time.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		i := -1
		for j, t := range c.timers {
			if !t.at.After(end) && (i < 0 || t.at.Before(c.timers[i].at)) {
				i = j
			}
		}
		if i < 0 {
			c.now = end
			c.mu.Unlock()
			return
		}
		t := c.timers[i]
		c.timers = slices.Delete(c.timers, i, i+1)
		c.now = t.at
		c.mu.Unlock()
		t.f()
	}
}

// waitTimers waits until n timers are pending: the lease's goroutine has
// gone back to sleep on the clock.
func (c *fakeClock) waitTimers(t *testing.T, n int) {
	t.Helper()
	if !testenv.WaitFor(10*time.Second, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.timers) == n
	}) {
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Fatalf("%d timers pending, want %d", len(c.timers), n)
	}
}

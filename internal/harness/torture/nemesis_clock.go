package torture

import (
	"context"
	"time"

	"github.com/fencegw/fencegw/internal/harness/pause"
)

// suspendWorker has a worker suspended as a machine is: stopped in its
// critical section (holding a lease, before its write) for two to three
// TTLs, then resumed with its monotonic clock set back by the time it was
// stopped — a machine's monotonic clock does not count a suspend — while
// its wall clock ran on. Its client must see the lease past its deadline
// by the wall clock alone (the report's leases: past-on-wall-clock-only).
func (n *nemesis) suspendWorker(ctx context.Context) bool {
	if n.clocks == nil {
		return false
	}
	var stopped time.Time
	return n.stopInWorker(ctx, n.rnd.IntN(len(n.workers)), "suspend-worker", viewPastOnWallOnly, n.ttls(2, 3),
		func(*clockPage) { stopped = time.Now() },
		func(page *clockPage) {
			step, lag := page.offsets()
			page.setOffsets(step, lag+time.Since(stopped))
		}, nil)
}

// stepWallClock steps a worker's wall clock one to three TTLs forward, at
// any instant, and back to the true time a second or three later: a lease
// taken before the step ends early by the wall clock, which is safe.
// Backwards, the step comes while the worker is stopped in its critical
// section, two to three TTLs, and goes back a TTL past that: resumed, its
// wall clock says the lease has time left, and only the monotonic clock
// can end it (past-on-monotonic-clock-only).
func (n *nemesis) stepWallClock(ctx context.Context, forward bool) bool {
	if n.clocks == nil {
		return false
	}
	i := n.rnd.IntN(len(n.workers))
	if !n.clockBusy[i].CompareAndSwap(false, true) {
		return false
	}
	page := n.clocks[i]
	span := time.Duration(1000+n.rnd.IntN(2000)) * time.Millisecond
	unstep := func() {
		defer n.clockBusy[i].Store(false)
		sleep(ctx, span)
		_, lag := page.offsets() // a suspend meanwhile added to it
		page.setOffsets(0, lag)
	}
	if forward {
		_, lag := page.offsets()
		page.setOffsets(n.ttls(1, 3), lag)
		n.count("wall-clock-forward")
		n.wg.Go(unstep)
		return true
	}
	d, stepped := n.ttls(2, 3), false
	started := n.stopInWorker(ctx, i, "wall-clock-back", viewPastOnMonotonicOnly, d,
		func(page *clockPage) {
			_, lag := page.offsets()
			page.setOffsets(-(d + n.cfg.TTL), lag)
			stepped = true
		},
		func(*clockPage) {},
		func() {
			if stepped {
				unstep()
			} else {
				n.clockBusy[i].Store(false)
			}
		})
	if !started {
		n.clockBusy[i].Store(false)
	}
	return started
}

// stopInWorker asks worker i to stop itself in its next critical section
// (whileStopped), calls stopped, keeps it stopped for d, calls resuming
// and resumes it; it counts name once the worker has recorded a write
// with a view of its lease of the kind the fault is for (view: a clock
// page word), and then, stopped or not, calls after (if not nil).
// Counting the write, not the stop, keeps a run going until its clock
// faults reached the client's checks (at the run's end the stop is cut
// short and the clocks set back at once, which would leave nothing for
// either check to see).
func (n *nemesis) stopInWorker(ctx context.Context, i int, name string, view int, d time.Duration, stopped, resuming func(*clockPage), after func()) bool {
	var seen int64
	return n.whileStopped(ctx, i, 4*n.cfg.TTL+5*time.Second,
		func(page *clockPage) {
			seen = page.views(view)
			stopped(page)
			sleep(ctx, d)
			resuming(page)
		},
		func(page *clockPage) {
			// The worker checks its lease at once on resuming; a loaded
			// machine may take a while to run it, never this long.
			if waitViews(context.WithoutCancel(ctx), page, view, seen, 4*n.cfg.TTL+5*time.Second) {
				n.count(name)
			} else {
				n.log.Info("a clock fault reached no write", "fault", name, "pid", n.workers[i].Process.Pid)
			}
		}, after)
}

// whileStopped asks worker i to stop itself in its next critical section
// (suspendIfAsked), waiting up to reach for it to get there, and once
// every thread of it has stopped calls held, resumes it and calls
// resumed; then, stopped or not, after (if not nil). The worker stops
// itself because only it knows where its critical section is: a fault
// there is the one that outlives a lease. False if the worker is the
// nemesis's already; a worker that reaches no critical section before
// the run ends is not stopped.
func (n *nemesis) whileStopped(ctx context.Context, i int, reach time.Duration, held, resumed func(*clockPage), after func()) bool {
	if !n.hold(i) {
		return false
	}
	page, pid := n.clocks[i], n.workers[i].Process.Pid
	if !page.askSuspend() {
		n.unhold(i)
		return false
	}
	n.wg.Go(func() {
		defer func() {
			n.unhold(i)
			if after != nil {
				after()
			}
		}()
		if !waitStopped(ctx, pid, reach) && page.withdrawSuspend() {
			return
		}
		if !waitStopped(context.WithoutCancel(ctx), pid, 30*time.Second) {
			n.log.Error("a worker that took its stop did not stop", "pid", pid)
			page.suspendDone()
			return
		}
		held(page)
		page.suspendDone()
		_ = pause.Resume(pid)
		resumed(page)
	})
	return true
}

// waitViews waits up to d for the worker to record more views of kind
// view than seen.
func waitViews(ctx context.Context, page *clockPage, view int, seen int64, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for page.views(view) <= seen {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// waitStopped waits up to d for every thread of pid to be stopped.
func waitStopped(ctx context.Context, pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !pause.Stopped(pid) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

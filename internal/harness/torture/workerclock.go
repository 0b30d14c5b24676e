package torture

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/torture/check"
)

// lag is how far the worker's monotonic clock is behind its wall clock
// by the suspends so far: read as a lease is asked for, it tells a
// suspend during the lease from one before it.
func (w *worker) lag() time.Duration {
	if w.page == nil {
		return 0
	}
	_, lag := w.page.offsets()
	return lag
}

// suspendIfAsked stops this process if the nemesis asked it to, at the
// end of its critical section: holding its lease, about to check it and
// write — Kleppmann's pause, between the work and the write. The nemesis
// changes its clock while it is stopped (a suspend holds its monotonic
// clock back; a wall clock may be stepped back) and resumes it. Taking
// the request here, not at a random instant, puts every such fault where
// only one of the client's two clock checks can see it, and the worker's
// check of its lease comes at once on resuming, before a keepalive's
// answer can end the lease by other means.
func (w *worker) suspendIfAsked() {
	if w.page != nil && w.page.takeSuspend() {
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	}
}

// leaseView is what the client says of l now, with both clocks' distance
// to its deadline; lag is the monotonic clock's lag when l was asked for.
// The readings are taken before the client's answer, so the client read
// its clocks no earlier; if the deadline (a keepalive) or the clock page
// (a step) moved meanwhile, nothing is recorded: the view would prove
// nothing. A view past its deadline on one clock alone is counted on the
// clock page too: the nemesis counts a clock fault only once it reached
// a write.
func (w *worker) leaseView(l *client.Lease, lag time.Duration) check.LeaseView {
	deadline := l.Deadline()
	var step, lagNow time.Duration
	if w.page != nil {
		step, lagNow = w.page.offsets()
	}
	now := w.clock.Now()
	err := l.Err()
	if l.Deadline() != deadline {
		return check.LeaseView{}
	}
	if w.page != nil {
		if s, g := w.page.offsets(); s != step || g != lagNow {
			return check.LeaseView{}
		}
	}
	v := check.LeaseView{
		Said:        said(err),
		WallLeftMs:  deadline.Round(0).Sub(now.Round(0)).Milliseconds(),
		MonoLeftMs:  deadline.Sub(now).Milliseconds(),
		SuspendedMs: (lagNow - lag).Milliseconds(),
		WallJumpMs:  step.Milliseconds(),
	}
	if w.page != nil {
		switch {
		case v.WallLeftMs < 0 && v.MonoLeftMs >= 0:
			w.page.countView(viewPastOnWallOnly)
		case v.MonoLeftMs < 0 && v.WallLeftMs >= 0:
			w.page.countView(viewPastOnMonotonicOnly)
		}
	}
	return v
}

// said names what Lease.Err returned.
func said(err error) string {
	switch {
	case err == nil:
		return check.LeaseValid
	case errors.Is(err, client.ErrLeaseExpired):
		return check.LeaseExpired
	case errors.Is(err, client.ErrLeaseLost):
		return check.LeaseLost
	case errors.Is(err, client.ErrReleased):
		return check.LeaseReleased
	}
	return "other: " + err.Error()
}

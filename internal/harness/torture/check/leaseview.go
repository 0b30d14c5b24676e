package check

import "fmt"

// LeaseView is what a worker's client said of a lease as the worker sent
// a write under it, and where the two clocks it judges by stood: the
// local deadline on the wall clock and on the monotonic clock. A worker
// records it only when nothing moved between its readings and the
// client's answer (the deadline, the clock's injected offsets), so that
// the client read the clocks no earlier than the worker did.
type LeaseView struct {
	Said       string `json:"said"`         // Lease.Err as the write was sent: LeaseValid, LeaseExpired, LeaseLost or LeaseReleased
	WallLeftMs int64  `json:"wall_left_ms"` // the local deadline minus now on the wall clock; negative: past
	MonoLeftMs int64  `json:"mono_left_ms"` // the same on the monotonic clock
	// SuspendedMs is how far the worker's monotonic clock fell behind its
	// wall clock while it held the lease: a suspend of the machine, which
	// the monotonic clock does not count.
	SuspendedMs int64 `json:"suspended_ms,omitempty"`
	// WallJumpMs is how far the worker's wall clock was stepped away from
	// the true time (forward: positive).
	WallJumpMs int64 `json:"wall_jump_ms,omitempty"`
}

// What a client may say of a lease (LeaseView.Said).
const (
	LeaseValid    = "valid"
	LeaseExpired  = "expired"
	LeaseLost     = "lost"
	LeaseReleased = "released"
)

// KindExpiryUnnoticed is a write sent while the client called its lease
// valid although one of its clocks had passed the lease's local deadline:
// the monotonic clock (a wall-clock step back must not extend a lease) or
// the wall clock (after a suspend the monotonic clock lags behind the
// TTL running on in etcd). The fence still refuses such a write if it is
// stale; the client's promise to stop sending it is what failed.
const KindExpiryUnnoticed = "expiry-unnoticed"

// checkLeaseViews holds every recorded view to the client's promise and
// counts what the views covered: how many there were, what the client
// said, how many had only one clock past the deadline (the cases that
// need both checks), how many came after a suspend or with the wall clock
// stepped. Nil when no write recorded a view.
func (c *checker) checkLeaseViews() map[string]int {
	counts := map[string]int{}
	for _, e := range c.history {
		v := e.Lease
		if e.Type != TypeInvoke || v == (LeaseView{}) {
			continue
		}
		counts["checked"]++
		if v.Said != LeaseValid {
			counts["said-"+v.Said]++
		}
		switch {
		case v.WallLeftMs < 0 && v.MonoLeftMs >= 0:
			counts["past-on-wall-clock-only"]++
		case v.MonoLeftMs < 0 && v.WallLeftMs >= 0:
			counts["past-on-monotonic-clock-only"]++
		}
		if v.SuspendedMs > 0 {
			counts["after-suspend"]++
		}
		if v.WallJumpMs != 0 {
			counts["wall-clock-stepped"]++
		}
		if v.Said == LeaseValid && (v.WallLeftMs < 0 || v.MonoLeftMs < 0) {
			c.report(KindExpiryUnnoticed, e.Resource, c.rowsByIntent[e.Intent], []string{e.Intent},
				"worker %d sent intent %s with token %s while its client called the lease valid: its deadline %s by the wall clock and %s by the monotonic clock (suspended %d ms, wall clock stepped %d ms)",
				e.Worker, e.Intent, e.Token, deadlineAt(v.WallLeftMs), deadlineAt(v.MonoLeftMs), v.SuspendedMs, v.WallJumpMs)
		}
	}
	if len(counts) == 0 {
		return nil
	}
	return counts
}

// deadlineAt says where a deadline stood, left ms ahead.
func deadlineAt(left int64) string {
	if left < 0 {
		return fmt.Sprintf("had passed %d ms before", -left)
	}
	return fmt.Sprintf("was %d ms ahead", left)
}

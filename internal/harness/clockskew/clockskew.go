// Package clockskew makes the clock readings of a process whose wall clock
// and monotonic clock disagree: after its machine was suspended (Linux's
// CLOCK_MONOTONIC stands still while CLOCK_REALTIME runs on) or after its
// wall clock was stepped. Code that judges time on both readings of a
// time.Time, as the Go client's lease deadlines do, can be tested with
// them. It imports nothing of fencegw.
//
// Nothing short of suspending the machine or stepping its clock — which
// every process on it would feel — makes the two readings disagree for
// one process: Linux has no per-process wall clock (time namespaces offset
// only the monotonic and boot clocks, and only before a process starts),
// libfaketime's LD_PRELOAD does not reach Go, which reads the clocks
// through the vDSO, and a process stopped with SIGSTOP sees both advance
// alike. The standard library shifts a reading only as a whole, so
// Reading reaches into time.Time's layout; Check proves that layout, and
// a caller should refuse to run without it.
package clockskew

import (
	"errors"
	"time"
	"unsafe"
)

// Reading returns t as read by a process whose wall clock was stepped by
// step and whose monotonic clock lags lag behind its wall clock: the wall
// reading is t+step, the monotonic reading t+step-lag. A suspend of d that
// has just ended is Reading(t, d, d) against readings taken before it as
// Reading(t, 0, 0): d later by the wall clock, no later by the monotonic
// one. A t without a monotonic reading gets only the step.
func Reading(t time.Time, step, lag time.Duration) time.Time {
	return shiftMono(t.Add(step), -lag)
}

// shiftMono returns t with its monotonic reading moved by d and its wall
// reading as it was.
func shiftMono(t time.Time, d time.Duration) time.Time {
	p := (*layout)(unsafe.Pointer(&t))
	if p.wall&hasMonotonic == 0 {
		return t // no monotonic reading to move
	}
	p.ext += int64(d)
	return t
}

// layout is time.Time's representation (Go 1.9 and later): with the
// hasMonotonic bit of wall set, ext is the monotonic reading.
type layout struct {
	wall uint64
	ext  int64
	loc  *time.Location
}

const hasMonotonic = 1 << 63

// ErrLayout: this Go's time.Time is not laid out as Reading assumes.
var ErrLayout = errors.New("clockskew: this Go's time.Time cannot be given a monotonic reading apart from its wall reading")

// Check proves Reading on a real reading: the wall reading moves by the
// step alone, the monotonic reading by the step less the lag.
func Check() error {
	if unsafe.Sizeof(time.Time{}) != unsafe.Sizeof(layout{}) {
		return ErrLayout
	}
	const step, lag = 1500 * time.Millisecond, 4 * time.Second
	t := time.Now()
	r := Reading(t, step, lag)
	if !r.Round(0).Equal(t.Round(0).Add(step)) || r.Sub(t) != step-lag || r.String() == t.Round(0).Add(step).String() {
		return ErrLayout
	}
	return nil
}

package clockskew

import (
	"testing"
	"time"
)

// TestSuspendReading: the reading a suspended machine's process gets on
// resuming — the wall clock ran on, the monotonic clock did not — judged
// as the Go client judges a lease: the monotonic reading says the
// deadline is ahead, the wall reading that it passed.
func TestSuspendReading(t *testing.T) {
	if err := Check(); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	deadline := before.Add(time.Second)
	// 100 ms before the deadline the machine slept 2 s.
	resumed := Reading(before.Add(900*time.Millisecond), 2*time.Second, 2*time.Second)
	if !resumed.Before(deadline) {
		t.Errorf("the monotonic reading says the deadline passed: %v past", resumed.Sub(deadline))
	}
	if resumed.Round(0).Before(deadline.Round(0)) {
		t.Errorf("the wall reading says the deadline is ahead")
	}
	// A wall clock stepped back an hour: the wall reading says there is
	// time, the monotonic one does not.
	late := Reading(deadline.Add(time.Millisecond), -time.Hour, -time.Hour)
	if late.Before(deadline) || !late.Round(0).Before(deadline.Round(0)) {
		t.Errorf("a step back moved the monotonic reading, or not the wall reading")
	}
	if wall := time.Unix(0, 5); Reading(wall, time.Hour, time.Minute) != wall.Add(time.Hour) {
		t.Errorf("a time without a monotonic reading got more than its step")
	}
}

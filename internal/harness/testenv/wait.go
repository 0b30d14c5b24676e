package testenv

import "time"

// WaitFor polls cond every 10ms until it holds or d passes, and reports
// whether it held. Tests wait with it for events (a lease gone, a
// goroutine ended), never to assert how long something takes.
func WaitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

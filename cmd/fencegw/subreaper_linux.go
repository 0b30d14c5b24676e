package main

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// becomeSubreaper makes this process the parent of its descendants
// orphaned from now on, instead of init, until restore. A process of the
// command's group whose parent has exited is then ours to reap, so the
// group is seen empty as soon as it is: init may reap late, and a
// container's PID 1 that is not an init never does, which would leave a
// zombie counting as a member for ever. If prctl fails, init reaps them as
// before.
func becomeSubreaper() (restore func()) {
	var was int32
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&was)), 0, 0, 0); err != nil {
		return func() {}
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return func() {}
	}
	// Restored for the tests, which run lock inside a process that also
	// runs other children (PostgreSQL servers) whose orphans it never reaps.
	return func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, uintptr(was), 0, 0, 0) }
}

//go:build unix

package pgcluster

import "syscall"

// killGroup SIGKILLs the whole process group led by pid, so backends left by
// a wedged postmaster go too.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// groupAlive reports whether any process in pid's group still exists.
func groupAlive(pid int) bool {
	return syscall.Kill(-pid, 0) == nil
}

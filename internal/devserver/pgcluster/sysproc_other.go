//go:build !unix

package pgcluster

import "syscall"

// sysProcAttr has no process-group or credential support here; only the
// postmaster itself is killed on a forced stop.
func sysProcAttr(*runAsUser) *syscall.SysProcAttr { return nil }

func killGroup(int) {}

func groupAlive(int) bool { return false }

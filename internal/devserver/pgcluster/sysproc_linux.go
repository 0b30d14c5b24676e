//go:build linux

package pgcluster

import "syscall"

// sysProcAttr puts the child in its own process group, so a terminal Ctrl-C
// reaches only us and Stop shuts the server down once, in order. Pdeathsig
// asks the kernel to stop the child if we die without calling Stop; Go sets
// it after the credential change, which would otherwise clear it. The kernel
// ties it to the forking OS thread, which Go retires only when a goroutine
// exits while locked to it (runtime.LockOSThread), so avoid calling Start
// from such a goroutine.
func sysProcAttr(u *runAsUser) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if u != nil {
		attr.Credential = &syscall.Credential{Uid: u.uid, Gid: u.gid}
	}
	return attr
}

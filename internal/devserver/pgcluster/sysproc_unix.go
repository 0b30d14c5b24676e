//go:build unix && !linux

package pgcluster

import "syscall"

// sysProcAttr puts the child in its own process group, so a terminal Ctrl-C
// reaches only us and Stop shuts the server down once, in order. There is
// no Pdeathsig outside Linux, so a crashed parent can leave the server running.
func sysProcAttr(u *runAsUser) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if u != nil {
		attr.Credential = &syscall.Credential{Uid: u.uid, Gid: u.gid}
	}
	return attr
}

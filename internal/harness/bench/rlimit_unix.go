//go:build unix

package bench

import "syscall"

// raiseFileLimit raises this process's soft limit of open files to its
// hard limit, as Go's runtime already does at start since Go 1.19 (this
// says so where it matters), and returns it; 0 if unknown.
func raiseFileLimit() uint64 {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
			_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
		}
	}
	return uint64(lim.Cur)
}

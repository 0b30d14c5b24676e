//go:build unix

package main

import "syscall"

// openFileLimit is RLIMIT_NOFILE's soft limit, which Go's runtime raised
// to the hard limit at start (Go 1.19 and later); 0 if it cannot be read.
func openFileLimit() uint64 {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return 0
	}
	return uint64(lim.Cur)
}

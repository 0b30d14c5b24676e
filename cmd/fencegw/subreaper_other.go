//go:build !linux

package main

// becomeSubreaper does nothing outside Linux: orphans of the command's
// group are reaped by init.
func becomeSubreaper() (restore func()) { return func() {} }

//go:build !unix

package bench

// raiseFileLimit does nothing outside Unix: the limit is unknown.
func raiseFileLimit() uint64 { return 0 }

//go:build !unix

package main

// openFileLimit is unknown outside Unix: --max-connections defaults to
// defaultMaxConnections.
func openFileLimit() uint64 { return 0 }

package pgcluster

import (
	"fmt"
	"net"
)

// FreePort asks the kernel for an unused 127.0.0.1 port. The port is
// released before anyone binds it, so another process can take it in
// between; Start retries with a fresh port when that happens, and other
// callers must expect it too.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

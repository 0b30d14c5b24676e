package gateway

import (
	"net"
)

// QueuedWrites is how many writes of resource wait behind the one in
// flight: tests use it to know that followers really queued.
func QueuedWrites(g *Gateway, resource string) int { return g.store.Queued(resource) }

// PublicDetail is publicDetail, for tests.
func PublicDetail(msg string) string { return publicDetail(msg) }

// LimitConnectionsNotifying is g.LimitConnections on plain HTTP, calling
// closed each time a connection gives its slot back, so that a test
// waits for that instead of for time to pass.
func LimitConnectionsNotifying(g *Gateway, ln net.Listener, limit int, tls bool, closed func()) net.Listener {
	l := g.LimitConnections(ln, limit, tls).(*connLimit)
	l.closed = closed
	return l
}

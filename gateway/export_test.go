package gateway

// QueuedWrites is how many writes of resource wait behind the one in
// flight: tests use it to know that followers really queued.
func QueuedWrites(g *Gateway, resource string) int {
	g.coal.mu.Lock()
	defer g.coal.mu.Unlock()
	if q := g.coal.queues[resource]; q != nil {
		return len(q.waiting)
	}
	return 0
}

package gateway

import "time"

// QueuedWrites is how many writes of resource wait behind the one in
// flight: tests use it to know that followers really queued.
func QueuedWrites(g *Gateway, resource string) int { return g.store.Queued(resource) }

// PublicDetail is publicDetail, for tests.
func PublicDetail(msg string) string { return publicDetail(msg) }

// SampleStatusRates closes the status chart's interval ending at at, as
// RunStatusRates does every few seconds.
func SampleStatusRates(g *Gateway, at time.Time) { g.sampleRates(at) }

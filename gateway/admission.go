package gateway

import "time"

// minMaxInFlight is the floor of Config.MaxInFlight's default: enough for
// a hot resource's coalesced transactions to stay large (BENCHMARKS.md).
const minMaxInFlight = 64

// defaultBodyTimeout bounds how long an admitted write's body may take to
// arrive. Clients send small bodies with their headers; on any network that
// deserves the name, 64 KiB takes milliseconds.
const defaultBodyTimeout = 5 * time.Second

// defaultMaxInFlight admits eight writes per pooled connection, at least
// minMaxInFlight: a write past the gate either holds a connection or waits
// for one, so more would only queue deeper in the pool.
func defaultMaxInFlight(poolSize int32) int {
	return max(minMaxInFlight, 8*int(poolSize))
}

// The admission gate (package admission) bounds how many writes are past
// it at once: waiting for a connection, in PostgreSQL. A write waiting at
// the gate holds what net/http allocated for its request, its body and
// decoded arguments, and the background reader net/http runs once a body
// is consumed, on a shallow stack the collector can shrink. Past the gate
// a write holds a pgx-deep stack. With many clients this is what lets a
// memory limit work: without the gate, a limit the waiting writes come
// near makes the collector run nearly back to back (BENCHMARKS.md
// measured it).
//
// Turns are shared fairly between clients (the policy's names; every
// caller is one client where it declares none), so a client's flood (of
// forged tokens, say) slows that client, not the others (issue 34).
//
// Nothing reads a waiting write's connection, so a client that gives up
// while its write waits is not noticed: once admitted, its write is read
// and applied like any other whose client left mid-flight. That is the
// HTTP contract for any request in flight; retries carry an
// Idempotency-Key.

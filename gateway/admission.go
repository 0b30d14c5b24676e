package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxInFlight is the floor of Config.MaxInFlight's default: enough
// for a hot resource's coalesced batches to stay large (BENCHMARKS.md).
const DefaultMaxInFlight = 64

// defaultBodyTimeout bounds how long an admitted write's body may take to
// arrive. Clients send small bodies with their headers; on any network that
// deserves the name, 64 KiB takes milliseconds.
const defaultBodyTimeout = 5 * time.Second

// defaultMaxInFlight admits eight writes per pooled connection, at least
// DefaultMaxInFlight: a write past the gate either holds a connection or
// waits for one, so more would only queue deeper in the pool.
func defaultMaxInFlight(poolSize int32) int {
	return max(DefaultMaxInFlight, 8*int(poolSize))
}

// admission bounds how many writes are past the gate at once: reading their
// body, waiting for a connection, in PostgreSQL. A write waiting at the gate
// holds only what net/http allocated for its request, on a shallow stack and
// with its body still unread (so net/http has not started the background
// reader it runs once a body is consumed). Past the gate a write holds its
// body, its arguments, a pgx-deep stack and that second goroutine: with
// 1,000 clients and 8 connections, gating is the difference between about
// 15 and 40 KiB per waiting client (BENCHMARKS.md).
type admission struct {
	slots   chan struct{}
	wait    time.Duration // how long a write may wait for a slot
	waiting prometheus.Gauge
}

func newAdmission(limit int, wait time.Duration, waiting prometheus.Gauge) *admission {
	return &admission{slots: make(chan struct{}, limit), wait: wait, waiting: waiting}
}

// enter takes a slot, waiting at most a.wait; every nil return must be
// paired with leave. A write refused here has not been read: nothing was
// written.
func (a *admission) enter(ctx context.Context) error {
	select {
	case a.slots <- struct{}{}:
		return nil
	default:
	}
	a.waiting.Inc()
	defer a.waiting.Dec()
	t := time.NewTimer(a.wait)
	defer t.Stop()
	select {
	case a.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: the request ended while it waited for a turn: %w", ErrOverloaded, ctx.Err())
	case <-t.C:
		return fmt.Errorf("%w: %d writes in flight, and this one waited %v for a turn", ErrOverloaded, cap(a.slots), a.wait)
	}
}

func (a *admission) leave() { <-a.slots }

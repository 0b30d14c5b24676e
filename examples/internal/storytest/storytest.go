// Package storytest is what the tests of the refund stories share (refund,
// outbox): the example's gateway, a fake provider, and a hold on the
// provider's first answer, the slow provider a worker outlives its lease
// waiting for. It is a harness: only tests import it (TestLayering).
package storytest

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/examples/internal/psp"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testgw"
)

// EventTimeout bounds every wait for an event; none is expected to take
// more than a few seconds.
const EventTimeout = 30 * time.Second

// Gateway serves the example's policy.yaml (the test runs in the
// example's folder) on a fresh database with its migrations/, recorded in
// table, and its guard installed: only fenced writes touch its tables.
// config, if set, changes the gateway's (a control turns the fence off).
func Gateway(t *testing.T, table string, config func(*gateway.Config)) *testgw.Gateway {
	t.Helper()
	return testgw.Start(t, testgw.Options{
		Policy: "policy.yaml", Migrations: "migrations", MigrationsTable: table, Guard: true, Config: config,
	})
}

// Provider serves a fake provider for the test and returns it and its URL.
func Provider(t *testing.T) (*psp.Fake, string) {
	t.Helper()
	fake := psp.NewFake()
	srv := httptest.NewServer(fake.Handler())
	t.Cleanup(srv.Close)
	return fake, srv.URL
}

// Held is the provider's answer to its first refund request, held back:
// the refund is made, the answer waits.
type Held struct {
	arrived chan struct{}
	answer  chan struct{}
	once    sync.Once
}

// HoldFirst makes fake hold its answer to the first refund request until
// Answer, or until the test ends: before the provider's server closes,
// which waits for its handlers. Call it after Provider.
func HoldFirst(t *testing.T, fake *psp.Fake) *Held {
	h := &Held{arrived: make(chan struct{}), answer: make(chan struct{})}
	fake.Stall = func(ctx context.Context, n int) {
		if n != 1 {
			return
		}
		close(h.arrived)
		select {
		case <-h.answer:
		case <-ctx.Done():
		}
	}
	t.Cleanup(h.Answer)
	return h
}

// Arrived is closed once the first refund request reached the provider.
func (h *Held) Arrived() <-chan struct{} { return h.arrived }

// Answer lets the provider answer; a second call does nothing.
func (h *Held) Answer() { h.once.Do(func() { close(h.answer) }) }

// Await returns the next value of ch, or fails the test after
// EventTimeout.
func Await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(EventTimeout):
	}
	t.Fatalf("waited %s for %s", EventTimeout, what)
	var zero T
	return zero
}

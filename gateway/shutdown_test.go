package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestStopLeaseWaitsLeavesNoGhost: a lease request waiting for a held
// lock when the gateway shuts down is answered 503 and its lease revoked:
// once the holder releases, the lock is free, not taken by a waiter no
// client knows of. New waits are refused; immediate ones still go through.
func TestStopLeaseWaitsLeavesNoGhost(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	holder := h.mustAcquire("account/acct-95", 60, 0)
	waited := make(chan response, 1)
	go func() {
		_, r := h.acquire("account/acct-95", 3600, 120)
		waited <- r
	}()
	if !testenv.WaitFor(30*time.Second, func() bool {
		r := h.do(http.MethodGet, "/v1/leases?resource=account/acct-95", nil, "")
		return strings.Contains(string(r.Body), `"waiting":1`)
	}) {
		t.Fatal("the waiter never queued")
	}
	h.gw.StopLeaseWaits()
	select {
	case r := <-waited:
		if r.Status != http.StatusServiceUnavailable || !strings.Contains(r.Problem.Detail, "shutting down") {
			t.Fatalf("the waiter at shutdown: %d %s, want 503 shutting down", r.Status, r.Body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter was not answered when waits stopped")
	}
	if _, r := h.acquire("account/acct-96", 10, 5); r.Status != http.StatusServiceUnavailable {
		t.Errorf("a new wait after StopLeaseWaits: %d %s, want 503", r.Status, r.Body)
	}
	h.release(holder)
	if !testenv.WaitFor(30*time.Second, func() bool {
		r := h.do(http.MethodGet, "/v1/leases?resource=account/acct-95", nil, "")
		return strings.Contains(string(r.Body), `"holder":null`)
	}) {
		r := h.do(http.MethodGet, "/v1/leases?resource=account/acct-95", nil, "")
		t.Fatalf("after the holder released, the lock is held by a ghost waiter: %s", r.Body)
	}
	if _, r := h.acquire("account/acct-95", 10, 0); r.Status != http.StatusCreated {
		t.Errorf("an immediate acquisition after StopLeaseWaits: %d %s, want 201", r.Status, r.Body)
	}
}

package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// holderPolicy is the demo policy with holder validation: a released or
// expired lease's token is refused by the authority at once.
func holderPolicy(t *testing.T) string {
	return strings.Replace(demoPolicy(t, "monotonic"), "compare: monotonic", "compare: monotonic\n    validation: holder", 1)
}

// lockWaiters counts sessions waiting for a lock in a statement matching
// the SQL LIKE pattern.
func (h *harness) lockWaiters(pattern string) int { return testenv.LockWaiters(h.pool, pattern) }

// TestKeyedRetryWaitsForTheAttemptInFlight is issue 7's reproduction: a
// keyed debit holds its key while it waits for the fence row, its lease
// ends, and the client retries with the same key. The retry's token is
// refused by the authority, but the first attempt can still commit, so the
// retry must wait for it and replay its answer, never say 403.
func TestKeyedRetryWaitsForTheAttemptInFlight(t *testing.T) {
	h := newHarness(t, holderPolicy(t))
	const account, resource = "acct-60", "account/acct-60"
	l := h.mustAcquire(resource, 10, 0)
	if r := h.write("credit", l.Token, debit(account, 100)); r.Status != http.StatusOK { // the fence row exists from here on
		t.Fatalf("credit: %d %s", r.Status, r.Body)
	}
	unblock := blockFence(t, h, resource)
	first := make(chan response, 1)
	go func() { first <- h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, "k60"), debit(account, 300)) }()
	waitOrFail(t, "the first attempt to wait for the fence row", func() bool { return h.lockWaiters("%fencegw.fence%") == 1 })
	h.release(l) // the first attempt's token is no longer the holder's

	retry := make(chan response, 1)
	go func() { retry <- h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, "k60"), debit(account, 300)) }()
	waitOrFail(t, "the retry to wait for the first attempt's key", func() bool {
		select {
		case r := <-retry:
			t.Fatalf("the retry answered while the first attempt was in flight: %d %s", r.Status, r.Body)
		default:
		}
		return h.lockWaiters("%settle_key%") == 1
	})
	unblock()
	a, b := <-first, <-retry
	if a.Status != http.StatusOK || a.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first attempt: %d %s, want a fresh 200", a.Status, a.Body)
	}
	if b.Status != http.StatusOK || b.Header.Get("Idempotent-Replayed") != "true" || string(b.Body) != string(a.Body) {
		t.Fatalf("retry: %d replayed=%q %s, want the first attempt's answer replayed", b.Status, b.Header.Get("Idempotent-Replayed"), b.Body)
	}
	if got := h.balance(account); got != 800 {
		t.Fatalf("balance = %d, want 800: debited once", got)
	}
}

// TestRefusalSettlesAnAttemptNotYetClaimed: the first attempt passed the
// authority and waits in the coalescer's queue, before claiming its key,
// when the retry is refused. The refusal is stored as the key's outcome, so
// the first attempt, when its turn comes, replays it instead of applying:
// the client was told "not applied", and that stays true.
func TestRefusalSettlesAnAttemptNotYetClaimed(t *testing.T) {
	h := newHarness(t, holderPolicy(t)) // coalesce is on by default
	const account, resource = "acct-61", "account/acct-61"
	l := h.mustAcquire(resource, 10, 0)
	if r := h.write("credit", l.Token, debit(account, 100)); r.Status != http.StatusOK {
		t.Fatalf("credit: %d %s", r.Status, r.Body)
	}
	unblock := blockFence(t, h, resource)
	inFlight := make(chan response, 1)
	go func() { inFlight <- h.write("debit", l.Token, debit(account, 10)) }()
	waitOrFail(t, "a write to wait for the fence row", func() bool { return h.lockWaiters("%fencegw.fence%") == 1 })
	first := make(chan response, 1)
	go func() { first <- h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, "k61"), debit(account, 300)) }()
	waitOrFail(t, "the first attempt to queue", func() bool { return gateway.QueuedWrites(h.gw, resource) == 1 })
	h.release(l)

	retry := h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, "k61"), debit(account, 300))
	if retry.Status != http.StatusForbidden || retry.Problem.Kind() != "token-rejected" {
		t.Fatalf("retry: %d %s, want 403 token-rejected", retry.Status, retry.Body)
	}
	unblock()
	if r := <-inFlight; r.Status != http.StatusOK {
		t.Fatalf("the write in flight: %d %s", r.Status, r.Body)
	}
	a := <-first
	if a.Status != http.StatusForbidden || a.Header.Get("Idempotent-Replayed") != "true" || string(a.Body) != string(retry.Body) {
		t.Fatalf("first attempt: %d replayed=%q %s, want the retry's refusal replayed", a.Status, a.Header.Get("Idempotent-Replayed"), a.Body)
	}
	if got := h.balance(account); got != 1090 {
		t.Fatalf("balance = %d, want 1090: the keyed debit must not apply after its refusal", got)
	}
}

// TestKeyedWriteWhileHalted: a halted authority refuses every token, but a
// keyed write is answered with its key's earlier outcome when there is
// one, and otherwise with outcome unknown (an earlier attempt may still be
// on its way); an unkeyed one is simply not applied.
func TestKeyedWriteWhileHalted(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const account, resource = "acct-62", "account/acct-62"
	l := h.mustAcquire(resource, 10, 0)
	defer h.release(l)
	done := h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, "k62"), debit(account, 5))
	if done.Status != http.StatusOK {
		t.Fatalf("debit: %d %s", done.Status, done.Body)
	}
	h.auth.Halt(&tokens.HaltedError{Reason: "test"})
	defer h.auth.Resume(h.auth.Epoch(), h.auth.NewestRevision())
	before := h.state()
	for _, tt := range []struct {
		name    string
		header  http.Header
		status  int
		outcome string
	}{
		{"completed key", keyed(l.Token, "k62"), http.StatusOK, ""},
		{"new key", keyed(l.Token, "k62-b"), http.StatusServiceUnavailable, "unknown"},
		{"no key", tok(l.Token), http.StatusServiceUnavailable, "not-applied"},
	} {
		r := h.do(http.MethodPost, "/v1/ops/debit", tt.header, debit(account, 5))
		if r.Status != tt.status || r.Problem.Outcome != tt.outcome {
			t.Errorf("%s: %d %s, want %d outcome %q", tt.name, r.Status, r.Body, tt.status, tt.outcome)
		}
		if tt.status == http.StatusOK && (r.Header.Get("Idempotent-Replayed") != "true" || string(r.Body) != string(done.Body)) {
			t.Errorf("%s: %s, want the stored answer replayed", tt.name, r.Body)
		}
	}
	if after := h.state(); after != before {
		t.Fatal("writes refused by a halted authority changed state")
	}
}

// TestForgedRefusalIsNotStored: a token the authority never issued cannot
// have an earlier attempt that passed, so its refusal is not stored as the
// key's outcome: whoever guesses a key cannot spoil it for its owner.
func TestForgedRefusalIsNotStored(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const account, resource = "acct-63", "account/acct-63"
	if r := h.do(http.MethodPost, "/v1/ops/debit", keyed("1:999999", "victim-key"), debit(account, 5)); r.Status != http.StatusForbidden {
		t.Fatalf("forged token: %d %s, want 403", r.Status, r.Body)
	}
	l := h.mustAcquire(resource, 10, 0)
	defer h.release(l)
	if r := h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, "victim-key"), debit(account, 5)); r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the owner's write with its key: %d %s, want a fresh 200", r.Status, r.Body)
	}
}

package gateway_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
)

func keyed(token, key string) http.Header {
	return http.Header{"Fencing-Token": {token}, "Idempotency-Key": {key}}
}

func (h *harness) logCount(account string) int {
	h.t.Helper()
	var n int
	if err := h.pool.QueryRow(h.t.Context(), "SELECT count(*) FROM demo.write_log WHERE account = $1", account).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// TestIdempotentRetryOnStrictResource: in strict mode a retry with the same
// token is stale, so the retry must carry an Idempotency-Key; it is then
// answered from the first execution and nothing runs twice.
func TestIdempotentRetryOnStrictResource(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "strict"))
	const account, resource = "acct-81", "account/acct-81"
	l := h.mustAcquire(resource, 5, 0)
	defer h.release(l)

	first := h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, `"debit-81-a"`), debit(account, 100))
	if first.Status != http.StatusOK || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	retry := h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, `"debit-81-a"`), `{"amount_cents": 100, "account": "acct-81"}`)
	if retry.Status != http.StatusOK || retry.Header.Get("Idempotent-Replayed") != "true" || string(retry.Body) != string(first.Body) {
		t.Fatalf("retry: %d replayed=%q %s; want 200, replayed, the first body %s", retry.Status, retry.Header.Get("Idempotent-Replayed"), retry.Body, first.Body)
	}
	if r := h.write("debit", l.Token, debit(account, 100)); r.Status != http.StatusConflict || r.Problem.Kind() != "stale-token" {
		t.Fatalf("retry without a key on a strict resource: %d %s, want 409 stale-token", r.Status, r.Body)
	}
	if got := h.balance(account); got != 900 {
		t.Fatalf("balance = %d, want 900: debited once", got)
	}

	before := h.state()
	r := h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, `"debit-81-a"`), debit(account, 200))
	if r.Status != http.StatusUnprocessableEntity || r.Problem.Kind() != "idempotency-mismatch" {
		t.Fatalf("same key, other amount: %d %s, want 422", r.Status, r.Body)
	}
	if after := h.state(); after != before {
		t.Fatalf("mismatch changed state: %s -> %s", before, after)
	}
}

// TestReplayComesBeforeTheFence: a holder that retries a write it already
// completed gets its answer even after a newer holder has written.
func TestReplayComesBeforeTheFence(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const account, resource = "acct-82", "account/acct-82"
	a := h.mustAcquire(resource, 5, 0)
	if r := h.do(http.MethodPost, "/v1/ops/debit", keyed(a.Token, "k82"), debit(account, 100)); r.Status != http.StatusOK {
		t.Fatalf("A: %d %s", r.Status, r.Body)
	}
	h.release(a)
	b := h.mustAcquire(resource, 5, 0)
	defer h.release(b)
	if r := h.write("debit", b.Token, debit(account, 100)); r.Status != http.StatusOK {
		t.Fatalf("B: %d %s", r.Status, r.Body)
	}
	r := h.do(http.MethodPost, "/v1/ops/debit", keyed(a.Token, "k82"), debit(account, 100))
	if r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("A's retry after B wrote: %d %s, want the replayed 200", r.Status, r.Body)
	}
	if r := h.do(http.MethodPost, "/v1/ops/debit", keyed(a.Token, "k82-new"), debit(account, 100)); r.Status != http.StatusConflict {
		t.Fatalf("A's new write after B wrote: %d %s, want 409", r.Status, r.Body)
	}
	if got := h.balance(account); got != 800 {
		t.Fatalf("balance = %d, want 800", got)
	}
}

// TestConcurrentSameKeyExecutesOnce: requests racing with one key wait for
// the first and replay its answer; the write happens exactly once.
func TestConcurrentSameKeyExecutesOnce(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "strict"))
	const account, resource = "acct-83", "account/acct-83"
	l := h.mustAcquire(resource, 5, 0)
	defer h.release(l)
	var (
		wg              sync.WaitGroup
		mu              sync.Mutex
		fresh, replayed int
		bodies          = map[string]bool{}
	)
	for range 8 {
		wg.Go(func() {
			r := h.do(http.MethodPost, "/v1/ops/credit", keyed(l.Token, "k83"), debit(account, 5))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.Status == http.StatusOK && r.Header.Get("Idempotent-Replayed") == "true":
				replayed++
			case r.Status == http.StatusOK:
				fresh++
			default:
				t.Errorf("%d %s", r.Status, r.Body)
			}
			bodies[string(r.Body)] = true
		})
	}
	wg.Wait()
	if fresh != 1 || replayed != 7 || len(bodies) != 1 {
		t.Fatalf("fresh %d, replayed %d, distinct bodies %d; want 1, 7, 1", fresh, replayed, len(bodies))
	}
	if n := h.logCount(account); n != 1 {
		t.Fatalf("write log has %d rows, want 1", n)
	}
	if got := h.balance(account); got != 1005 {
		t.Fatalf("balance = %d, want 1005", got)
	}
}

// TestRefusalIsTheKeysOutcome: a keyed write that is refused for good
// (here: insufficient balance) stores the refusal as its key's outcome, so
// a retry with the key gets the same answer even after the balance was
// topped up: no attempt with that key can apply once the client was told
// it did not. A new key is a new request.
func TestRefusalIsTheKeysOutcome(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const account, resource = "acct-84", "account/acct-84"
	l := h.mustAcquire(resource, 5, 0)
	defer h.release(l)
	before := h.state()
	first := h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, "k84"), debit(account, 5000))
	if first.Status != http.StatusConflict || first.Problem.Kind() != "precondition-failed" {
		t.Fatalf("overdraw: %d %s", first.Status, first.Body)
	}
	if after := h.state(); after != before {
		t.Fatalf("refused keyed write changed state")
	}
	if r := h.write("credit", l.Token, debit(account, 5000)); r.Status != http.StatusOK {
		t.Fatalf("credit: %d %s", r.Status, r.Body)
	}
	retry := h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, "k84"), debit(account, 5000))
	if retry.Status != http.StatusConflict || retry.Header.Get("Idempotent-Replayed") != "true" ||
		retry.Header.Get("Content-Type") != "application/problem+json" || string(retry.Body) != string(first.Body) {
		t.Fatalf("retry after the credit: %d replayed=%q %s, want the first refusal replayed", retry.Status, retry.Header.Get("Idempotent-Replayed"), retry.Body)
	}
	if r := h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, "k84"), debit(account, 1)); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("the refused key with other arguments: %d %s, want 422", r.Status, r.Body)
	}
	if r := h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, "k84-b"), debit(account, 5000)); r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("a new key: %d %s, want a fresh 200", r.Status, r.Body)
	}
	if got := h.balance(account); got != 1000 {
		t.Fatalf("balance = %d, want 1000", got)
	}
	// Keys are scoped by operation: the same key on credit is a new request.
	if r := h.do(http.MethodPost, "/v1/ops/credit", keyed(l.Token, "k84"), debit(account, 1)); r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("same key on another operation: %d %s, want a fresh 200", r.Status, r.Body)
	}
}

func TestIdempotencyKeyValidated(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	l := h.mustAcquire("account/acct-85", 5, 0)
	defer h.release(l)
	for name, hdr := range map[string]http.Header{
		"too long":    keyed(l.Token, strings.Repeat("k", 256)),
		"empty":       keyed(l.Token, `""`),
		"control":     keyed(l.Token, "a\tb"),
		"two headers": {"Fencing-Token": {l.Token}, "Idempotency-Key": {"a", "b"}},
	} {
		before := h.state()
		if r := h.do(http.MethodPost, "/v1/ops/debit", hdr, debit("acct-85", 1)); r.Status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", name, r.Status, r.Body)
		}
		if after := h.state(); after != before {
			t.Errorf("%s: state changed", name)
		}
	}
}

// TestReplayEvenWhenTheAuthorityRefuses: in holder mode a retired holder's
// token is refused by etcd, but its keyed retry still gets its answer.
func TestReplayEvenWhenTheAuthorityRefuses(t *testing.T) {
	pol := strings.Replace(demoPolicy(t, "monotonic"), "compare: monotonic", "compare: monotonic\n    validation: holder", 1)
	h := newHarness(t, pol)
	const account, resource = "acct-86", "account/acct-86"
	a := h.mustAcquire(resource, 5, 0)
	first := h.do(http.MethodPost, "/v1/ops/debit", keyed(a.Token, "k86"), debit(account, 100))
	if first.Status != http.StatusOK {
		t.Fatalf("A: %d %s", first.Status, first.Body)
	}
	h.release(a)
	b := h.mustAcquire(resource, 5, 0)
	defer h.release(b)
	r := h.do(http.MethodPost, "/v1/ops/debit", keyed(a.Token, "k86"), debit(account, 100))
	if r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "true" || string(r.Body) != string(first.Body) {
		t.Fatalf("A's keyed retry after B took the lock: %d %s, want the replayed 200", r.Status, r.Body)
	}
	if r := h.do(http.MethodPost, "/v1/ops/debit", keyed(a.Token, "k86"), debit(account, 5)); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("same key, other amount: %d %s, want 422", r.Status, r.Body)
	}
	if r := h.do(http.MethodPost, "/v1/ops/debit", keyed(a.Token, "k86-new"), debit(account, 100)); r.Status != http.StatusForbidden {
		t.Fatalf("A's new keyed write: %d %s, want 403", r.Status, r.Body)
	}
	if got := h.balance(account); got != 900 {
		t.Fatalf("balance = %d, want 900", got)
	}
}

package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway"
)

// TestBusinessDeadline is the seed's §9.7.1 check 5: the lease is valid but
// the write's window has closed. A write carrying Fencing-Not-After applies
// only if PostgreSQL's clock has not passed it when the write's fence is
// advanced: one that waited past it (here on a fence row held by another
// transaction) is refused, 409 deadline-passed, nothing written, and a
// retry with its key is told the same.
func TestBusinessDeadline(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const account, resource = "acct-57", "account/acct-57"
	l := h.mustAcquire(resource, 60, 0)
	defer h.release(l)
	withDeadline := func(d time.Time, key string) http.Header {
		hdr := http.Header{"Fencing-Token": {l.Token}, gateway.NotAfterHeader: {d.UTC().Format(time.RFC3339Nano)}}
		if key != "" {
			hdr.Set("Idempotency-Key", key)
		}
		return hdr
	}
	if r := h.do(http.MethodPost, "/v1/ops/credit", withDeadline(time.Now().Add(time.Minute), ""), debit(account, 1)); r.Status != http.StatusOK {
		t.Fatalf("a write well before its deadline: %d %s", r.Status, r.Body)
	}
	before := h.state()
	if r := h.do(http.MethodPost, "/v1/ops/credit", withDeadline(time.Now().Add(-time.Second), ""), debit(account, 1)); r.Status != http.StatusConflict || r.Problem.Kind() != "deadline-passed" {
		t.Fatalf("a write past its deadline on arrival: %d %s, want 409 deadline-passed", r.Status, r.Body)
	}

	unblock := blockFence(t, h, resource)
	deadline := time.Now().Add(300 * time.Millisecond)
	late := make(chan response, 1)
	go func() {
		late <- h.do(http.MethodPost, "/v1/ops/credit", withDeadline(deadline, "k57"), debit(account, 1))
	}()
	waitOrFail(t, "the write to wait for its fence row", func() bool { return h.lockWaiters("%fencegw.fence%") == 1 })
	waitOrFail(t, "the database's clock to pass the deadline", func() bool {
		var past bool
		_ = h.pool.QueryRow(context.Background(), "SELECT clock_timestamp() > $1", deadline).Scan(&past)
		return past
	})
	unblock()
	r := <-late
	if r.Status != http.StatusConflict || r.Problem.Kind() != "deadline-passed" || !strings.Contains(r.Problem.Detail, "by the database's clock") {
		t.Fatalf("a write that reached its fence after its deadline: %d %s, want 409 deadline-passed", r.Status, r.Body)
	}
	retry := h.do(http.MethodPost, "/v1/ops/credit", withDeadline(time.Now().Add(time.Minute), "k57"), debit(account, 1))
	if retry.Status != http.StatusConflict || retry.Header.Get(gateway.ReplayedHeader) != "true" || string(retry.Body) != string(r.Body) {
		t.Fatalf("a retry with the key and a later deadline: %d %s, want the refusal replayed: a deadline passed stays passed", retry.Status, retry.Body)
	}
	if after := h.state(); after != before {
		t.Fatalf("refused writes changed the database: %s -> %s", before, after)
	}
}

// TestCoalescedWritesKeepTheirOwnDeadline: writes queued together in one
// transaction are each held to their own deadline: the one past it is
// refused alone, the others apply.
func TestCoalescedWritesKeepTheirOwnDeadline(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const account, resource = "acct-58", "account/acct-58"
	l := h.mustAcquire(resource, 60, 0)
	defer h.release(l)
	if r := h.write("credit", l.Token, debit(account, 1)); r.Status != http.StatusOK {
		t.Fatalf("credit: %d %s", r.Status, r.Body)
	}
	unblock := blockFence(t, h, resource)
	first := make(chan response, 1)
	go func() { first <- h.write("credit", l.Token, debit(account, 10)) }()
	waitOrFail(t, "a write to wait for the fence row", func() bool { return h.lockWaiters("%fencegw.fence%") == 1 })
	soon := time.Now().Add(200 * time.Millisecond)
	send := func(d time.Time, cents int) <-chan response {
		ch := make(chan response, 1)
		go func() {
			ch <- h.do(http.MethodPost, "/v1/ops/credit", http.Header{"Fencing-Token": {l.Token}, gateway.NotAfterHeader: {d.UTC().Format(time.RFC3339Nano)}}, debit(account, cents))
		}()
		return ch
	}
	expiring := send(soon, 100)
	waitOrFail(t, "the expiring write to queue", func() bool { return gateway.QueuedWrites(h.gw, resource) == 1 })
	lasting := send(time.Now().Add(time.Minute), 1000)
	waitOrFail(t, "the lasting write to queue", func() bool { return gateway.QueuedWrites(h.gw, resource) == 2 })
	waitOrFail(t, "the database's clock to pass the first deadline", func() bool {
		var past bool
		_ = h.pool.QueryRow(context.Background(), "SELECT clock_timestamp() > $1", soon).Scan(&past)
		return past
	})
	base := h.balance(account)
	unblock()
	if r := <-first; r.Status != http.StatusOK {
		t.Fatalf("the write in flight: %d %s", r.Status, r.Body)
	}
	if r := <-expiring; r.Status != http.StatusConflict || r.Problem.Kind() != "deadline-passed" {
		t.Errorf("the write past its deadline: %d %s, want 409 deadline-passed", r.Status, r.Body)
	}
	if r := <-lasting; r.Status != http.StatusOK {
		t.Errorf("the write within its deadline, in the same transaction: %d %s, want 200", r.Status, r.Body)
	}
	if got := h.balance(account) - base; got != 10+1000 {
		t.Fatalf("balance moved by %d, want %d: the expired write must not apply", got, 10+1000)
	}
}

// TestDeadlineHeaderIsChecked: malformed, repeated or absurdly far
// deadlines are bad requests, and change nothing.
func TestDeadlineHeaderIsChecked(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	l := h.mustAcquire("account/acct-59", 60, 0)
	defer h.release(l)
	before := h.state()
	for name, values := range map[string][]string{
		"not a time":     {"tomorrow"},
		"no zone":        {"2026-12-01T17:00:00"},
		"two":            {time.Now().Add(time.Minute).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
		"a century away": {time.Now().AddDate(100, 0, 0).UTC().Format(time.RFC3339)},
	} {
		hdr := http.Header{"Fencing-Token": {l.Token}, gateway.NotAfterHeader: values}
		if r := h.do(http.MethodPost, "/v1/ops/credit", hdr, debit("acct-59", 1)); r.Status != http.StatusBadRequest || !strings.Contains(r.Problem.Detail, gateway.NotAfterHeader) {
			t.Errorf("%s: %d %s, want 400 naming %s", name, r.Status, r.Body, gateway.NotAfterHeader)
		}
	}
	batch := `{"writes": [{"operation": "credit", "args": {"account": "acct-59", "amount_cents": 1}, "token": "` + l.Token + `"}]}`
	hdr := http.Header{gateway.NotAfterHeader: {time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)}}
	if r := h.do(http.MethodPost, "/v1/batch", hdr, batch); r.Status != http.StatusConflict || r.Problem.Kind() != "deadline-passed" {
		t.Errorf("a batch past its deadline: %d %s, want 409 deadline-passed", r.Status, r.Body)
	}
	if after := h.state(); after != before {
		t.Fatalf("refused writes changed the database: %s -> %s", before, after)
	}
}

package gateway_test

import (
	"fmt"
	"github.com/fencegw/fencegw/gateway"
	"net/http"
	"strings"
	"sync"
	"testing"
)

const tagPolicy = `
  tag:
    resource: account
    args:
      account: {type: string, max_length: 64}
      tag: {type: string, max_length: 16}
    statements:
      - sql: INSERT INTO demo.tags (account, tag) VALUES (:account, :tag)
  nudge:
    resource: account
    args:
      account: {type: string, max_length: 64}
      n: {type: integer}
    statements:
      - sql: UPDATE demo.accounts SET balance_cents = balance_cents + :n::int4 WHERE id = :account
`

// TestCoalescedDeferredConstraint: a deferred unique constraint fails at
// COMMIT, outside every write's savepoint, so it would fail the whole
// coalesced transaction. The gateway then runs the batch's writes one by one:
// only the duplicate is refused.
func TestCoalescedDeferredConstraint(t *testing.T) {
	pol := strings.Replace(demoPolicy(t, "monotonic"), "compare: monotonic", "compare: monotonic\n    coalesce: true", 1)
	pol = strings.Replace(pol, "\noperations:\n", "\noperations:\n"+tagPolicy, 1)
	h := newHarness(t, pol)
	if _, err := h.pool.Exec(t.Context(), `CREATE TABLE demo.tags (account text, tag text,
		UNIQUE (account, tag) DEFERRABLE INITIALLY DEFERRED)`); err != nil {
		t.Fatal(err)
	}
	const account, resource = "acct-34", "account/acct-34"
	l := h.mustAcquire(resource, 10, 0)
	defer h.release(l)
	var (
		wg              sync.WaitGroup
		mu              sync.Mutex
		ok, constraints int
	)
	for i := range 12 {
		tag := fmt.Sprintf("t%d", min(i, 10)) // t10 twice
		wg.Go(func() {
			r := h.write("tag", l.Token, fmt.Sprintf(`{"account": %q, "tag": %q}`, account, tag))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.Status == http.StatusOK:
				ok++
			case r.Status == http.StatusConflict && r.Problem.Kind() == "constraint":
				constraints++
			default:
				t.Errorf("tag %s: %d %s", tag, r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	if ok != 11 || constraints != 1 {
		t.Fatalf("%d accepted, %d constraint violations; want 11 and 1", ok, constraints)
	}
	var n int
	if err := h.pool.QueryRow(t.Context(), "SELECT count(*) FROM demo.tags").Scan(&n); err != nil || n != 11 {
		t.Fatalf("tags = %d, %v; want 11", n, err)
	}
}

// TestArgumentThatDoesNotFitItsColumn: pgx refuses to encode 3e9 for an
// int4 parameter: a 400, not "outcome unknown", and nothing written.
func TestArgumentThatDoesNotFitItsColumn(t *testing.T) {
	h := newHarness(t, strings.Replace(demoPolicy(t, "monotonic"), "\noperations:\n", "\noperations:\n"+tagPolicy, 1))
	// On another account than those blocked below: pgx closes the
	// connection by sending the statements queued before the argument
	// (the fence among them), then Terminate, without the Sync. The
	// backend runs them and rolls back at the Terminate, which on a busy
	// machine can come after blockFence takes its lock; on a blocked
	// account such a backend would pass for the write in flight.
	other := h.mustAcquire("account/acct-88", 10, 0)
	defer h.release(other)
	before := h.state()
	for name, hdr := range map[string]http.Header{"unkeyed": tok(other.Token), "keyed": keyed(other.Token, "nudge-big")} {
		r := h.do(http.MethodPost, "/v1/ops/nudge", hdr, `{"account": "acct-88", "n": 3000000000}`)
		if r.Status != http.StatusBadRequest || r.Problem.Kind() != "bad-request" || strings.Contains(r.Problem.Detail, "OID") {
			t.Fatalf("%s, 3e9 for an int4: %d %s, want 400 bad-request naming no driver internals", name, r.Status, r.Body)
		}
		if after := h.state(); after != before {
			t.Fatalf("%s: state changed", name)
		}
	}
	// Queued behind a write in flight, the bad ones and good ones share a
	// transaction: pgx cannot encode the bad one and drops the connection;
	// each then runs alone, and only the bad ones fail. Keyed, the bad
	// writes take the transaction with savepoints there; unkeyed, all of
	// them are one implicit transaction.
	h = h.sibling() // patient (30 s): the write in flight must outwait the test's steps on a loaded machine
	queuedWithBadOnes(t, h, "acct-35", true)
	queuedWithBadOnes(t, h, "acct-89", false)
}

// queuedWithBadOnes queues good credits and writes whose argument does not
// fit its column behind a write in flight on account, and checks that only
// the bad ones fail and the good ones apply once.
func queuedWithBadOnes(t *testing.T, h *harness, account string, keyedBad bool) {
	t.Helper()
	l := h.mustAcquire("account/"+account, 10, 0)
	defer h.release(l)
	if r := h.write("credit", l.Token, debit(account, 1)); r.Status != http.StatusOK { // the fence row exists from here on
		t.Fatalf("credit: %d %s", r.Status, r.Body)
	}
	unblock := blockFence(t, h, "account/"+account)
	first := make(chan response, 1)
	go func() { first <- h.write("credit", l.Token, debit(account, 1)) }()
	waitUntilBlocked(t, h)
	bad := fmt.Sprintf(`{"account": %q, "n": 3000000000}`, account)
	bodies := []string{debit(account, 10), bad, debit(account, 10), bad, debit(account, 10)}
	answers := make([]chan response, len(bodies))
	for i, body := range bodies {
		answers[i] = make(chan response, 1)
		op, hdr := "credit", tok(l.Token)
		if body == bad {
			op = "nudge"
			if keyedBad {
				hdr = keyed(l.Token, fmt.Sprint("nudge-queued-", i))
			}
		}
		go func() { answers[i] <- h.do(http.MethodPost, "/v1/ops/"+op, hdr, body) }()
		waitOrFail(t, "the write to queue", func() bool { return gateway.QueuedWrites(h.gw, "account/"+account) == i+1 })
	}
	base := h.balance(account)
	unblock()
	if r := <-first; r.Status != http.StatusOK {
		t.Fatalf("the write in flight: %d %s", r.Status, r.Body)
	}
	for i, body := range bodies {
		want := http.StatusOK
		if body == bad {
			want = http.StatusBadRequest
		}
		if r := <-answers[i]; r.Status != want {
			t.Errorf("keyed bad writes %v, queued write %d: %d %s, want %d", keyedBad, i, r.Status, r.Body, want)
		}
	}
	if got := h.balance(account) - base; got != 1+30 {
		t.Fatalf("keyed bad writes %v: balance moved by %d, want 31: the good writes applied, each once", keyedBad, got)
	}
}

// TestBatchArgumentThatDoesNotFitNamesItsWrite: a batch refused because
// one write's argument does not fit its column names that write, when it
// is the only one running the statement; nothing is written.
func TestBatchArgumentThatDoesNotFitNamesItsWrite(t *testing.T) {
	h := newHarness(t, strings.Replace(demoPolicy(t, "monotonic"), "\noperations:\n", "\noperations:\n"+tagPolicy, 1))
	a := h.mustAcquire("account/acct-52", 10, 0)
	defer h.release(a)
	b := h.mustAcquire("account/acct-53", 10, 0)
	defer h.release(b)
	before := h.state()
	body := batchBody(batchWrite("credit", debit("acct-52", 1), `"`+a.Token+`"`), batchWrite("nudge", `{"account": "acct-53", "n": 3000000000}`, `"`+b.Token+`"`))
	r := h.do(http.MethodPost, "/v1/batch", nil, body)
	if r.Status != http.StatusBadRequest || r.Problem.Index == nil || *r.Problem.Index != 1 {
		t.Fatalf("a batch whose write 1 does not fit its column: %d %s, want 400 naming write 1", r.Status, r.Body)
	}
	if h.state() != before {
		t.Fatal("a refused batch changed the database")
	}
}

package gateway_test

import (
	"fmt"
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
// coalesced batch. The gateway then runs the batch's writes one by one:
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
// int4 parameter before sending anything: a 400, not "outcome unknown".
func TestArgumentThatDoesNotFitItsColumn(t *testing.T) {
	h := newHarness(t, strings.Replace(demoPolicy(t, "monotonic"), "\noperations:\n", "\noperations:\n"+tagPolicy, 1))
	l := h.mustAcquire("account/acct-35", 10, 0)
	defer h.release(l)
	before := h.state()
	r := h.write("nudge", l.Token, `{"account": "acct-35", "n": 3000000000}`)
	if r.Status != http.StatusBadRequest || r.Problem.Kind() != "bad-request" {
		t.Fatalf("3e9 for an int4: %d %s, want 400 bad-request", r.Status, r.Body)
	}
	if after := h.state(); after != before {
		t.Fatal("state changed")
	}
}

package gateway_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/gateway"
)

// checkedDebitPolicy is the demo policy with debit_checked, whose SQL
// refuses an overdraft itself: demo.debit_checked raises an SQLSTATE of
// the test's choosing, which the policy maps (sql_errors, the PT class) or
// fencegw reads itself (a data exception).
func checkedDebitPolicy(t *testing.T) string {
	return strings.Replace(demoPolicy(t, "monotonic"), "\noperations:\n", "\noperations:\n"+`  debit_checked:
    resource: account
    args:
      account: {type: string, max_length: 64, pattern: "acct-[0-9]+"}
      amount_cents: {type: integer, min: 1, max: 100000000}
    statements:
      - sql: SELECT demo.debit_checked(:account, :amount_cents)
`, 1) + `
sql_errors:
  P0001: {status: 409, type: overdrawn, message: true}
`
}

// createCheckedDebit defines demo.debit_checked to raise sqlstate when the
// balance does not cover the debit.
func createCheckedDebit(t *testing.T, h *harness, sqlstate string) {
	t.Helper()
	_, err := h.pool.Exec(context.Background(), fmt.Sprintf(`CREATE FUNCTION demo.debit_checked(p_account text, p_amount bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v bigint;
BEGIN
	UPDATE demo.accounts SET balance_cents = balance_cents - p_amount
	 WHERE id = p_account AND balance_cents >= p_amount RETURNING balance_cents INTO v;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'insufficient funds' USING ERRCODE = '%s';
	END IF;
	RETURN v;
END $$`, sqlstate))
	if err != nil {
		t.Fatal(err)
	}
}

// readGate holds, while closed, whatever PostgreSQL sends on the
// connections it wraps, so that a replica learns of a commit only when
// the test says: what PostgreSQL did is then decided, and what the replica
// does next is not yet.
type readGate struct {
	mu     sync.Mutex
	closed chan struct{} // nil while open
}

func (g *readGate) close() { g.mu.Lock(); g.closed = make(chan struct{}); g.mu.Unlock() }

func (g *readGate) open() {
	g.mu.Lock()
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
	g.mu.Unlock()
}

func (g *readGate) wait() {
	g.mu.Lock()
	c := g.closed
	g.mu.Unlock()
	if c != nil {
		<-c
	}
}

type gatedReads struct {
	net.Conn
	g *readGate
}

// Read holds what arrived, not the wait for it: a read already waiting
// when the gate closes must not slip through.
func (c gatedReads) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.g.wait()
	return n, err
}

// gatedReplica is another gateway on h's database whose answers from
// PostgreSQL pass g.
func gatedReplica(t *testing.T, h *harness, g *readGate) *harness {
	return wrappedGateway(t, h, func(*pgxpool.Config) {}, func(c net.Conn) net.Conn { return gatedReads{c, g} })
}

// TestEveryFinalRefusalSettlesTheKey is issue 23's case A: a keyed debit's
// first attempt waits unclaimed on replica A, queued behind a credit that
// would cover it, while the unit in flight before them has committed but
// A has not heard back yet; its retry, on replica B, claims the key, runs
// before the covering credit, and is refused by the application's SQL.
// That refusal is final, so it is the key's outcome: the first attempt,
// when its turn comes, replays it instead of debiting. It held for
// preconditions and stale tokens; it did not for refusals the policy maps
// (sql_errors, PTxyz) or data exceptions, which were answered as final but
// not stored, and the first attempt then debited (200).
func TestEveryFinalRefusalSettlesTheKey(t *testing.T) {
	for _, tc := range []struct {
		name, sqlstate, kind string
		status               int
	}{
		{"application class", "PT409", "application", http.StatusConflict},
		{"sql_errors", "P0001", "overdrawn", http.StatusConflict},
		{"data exception", "22003", "bad-request", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newHarness(t, checkedDebitPolicy(t))
			gate := &readGate{}
			a := gatedReplica(t, b, gate)
			createCheckedDebit(t, b, tc.sqlstate)
			const account, resource = "acct-71", "account/acct-71"
			l := b.mustAcquire(resource, 30, 0)
			defer b.release(l)
			if r := b.write("credit", l.Token, debit(account, 10)); r.Status != http.StatusOK { // the fence row exists from here on
				t.Fatalf("credit: %d %s", r.Status, r.Body)
			}
			unblock := blockFence(t, b, resource)
			inFlight := make(chan response, 1)
			go func() { inFlight <- a.write("credit", l.Token, debit(account, 1)) }()
			waitOrFail(t, "a credit to wait for the fence row", func() bool { return b.lockWaiters("%fencegw.fence%") == 1 })
			cover := make(chan response, 1)
			go func() { cover <- a.write("credit", l.Token, debit(account, 5000)) }()
			waitOrFail(t, "the covering credit to queue", func() bool { return gateway.QueuedWrites(a.gw, resource) == 1 })
			first := make(chan response, 1)
			go func() {
				first <- a.do(http.MethodPost, "/v1/ops/debit_checked", keyed(l.Token, "k71"), debit(account, 3000))
			}()
			waitOrFail(t, "the first attempt to queue", func() bool { return gateway.QueuedWrites(a.gw, resource) == 2 })
			gate.close() // A will not hear of its credit's commit
			retry := make(chan response, 1)
			go func() {
				retry <- b.do(http.MethodPost, "/v1/ops/debit_checked", keyed(l.Token, "k71"), debit(account, 3000))
			}()
			waitOrFail(t, "the retry to wait for the fence row", func() bool { return b.lockWaiters("%fencegw.fence%") == 2 })
			unblock()

			rb := <-retry
			gate.open()
			if rb.Status != tc.status || rb.Problem.Kind() != tc.kind {
				t.Fatalf("retry: %d %s, want %d %s (it ran before the covering credit)", rb.Status, rb.Body, tc.status, tc.kind)
			}
			for what, c := range map[string]chan response{"the credit in flight": inFlight, "the covering credit": cover} {
				if r := <-c; r.Status != http.StatusOK {
					t.Fatalf("%s: %d %s", what, r.Status, r.Body)
				}
			}
			ra := <-first
			if ra.Status != tc.status || ra.Header.Get(gateway.ReplayedHeader) != "true" || string(ra.Body) != string(rb.Body) {
				t.Fatalf("first attempt: %d replayed=%q %s, want the retry's refusal replayed: the client was told the debit was refused",
					ra.Status, ra.Header.Get(gateway.ReplayedHeader), ra.Body)
			}
			if got := b.balance(account); got != 1000+10+1+5000 {
				t.Fatalf("balance = %d, want %d: the refused debit must never apply", got, 1000+10+1+5000)
			}
			if r := b.do(http.MethodPost, "/v1/ops/debit_checked", keyed(l.Token, "k71"), debit(account, 3000)); r.Status != tc.status || string(r.Body) != string(rb.Body) {
				t.Fatalf("a later retry: %d %s, want the key's refusal", r.Status, r.Body)
			}
		})
	}
}

// TestKeyedAttemptNotAppliedLeavesTheKeyUnknown: a keyed retry whose wait
// for the fence row runs out was not applied, but its first attempt,
// queued unclaimed on another replica, still can be: the retry's answer
// says the key's outcome is unknown (retry with the same key), never
// "not applied", and the first attempt does apply afterwards.
func TestKeyedAttemptNotAppliedLeavesTheKeyUnknown(t *testing.T) {
	a := newHarness(t, demoPolicy(t, "monotonic"))
	b := wrappedGateway(t, a, func(cfg *pgxpool.Config) { cfg.ConnConfig.RuntimeParams["lock_timeout"] = "200" },
		func(c net.Conn) net.Conn { return c })
	const account, resource = "acct-72", "account/acct-72"
	l := a.mustAcquire(resource, 30, 0)
	defer a.release(l)
	if r := a.write("credit", l.Token, debit(account, 10)); r.Status != http.StatusOK {
		t.Fatalf("credit: %d %s", r.Status, r.Body)
	}
	unblock := blockFence(t, a, resource)
	inFlight := make(chan response, 1)
	go func() { inFlight <- a.write("credit", l.Token, debit(account, 1)) }()
	waitOrFail(t, "a credit to wait for the fence row", func() bool { return a.lockWaiters("%fencegw.fence%") == 1 })
	first := make(chan response, 1)
	go func() { first <- a.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, "k72"), debit(account, 300)) }()
	waitOrFail(t, "the first attempt to queue", func() bool { return gateway.QueuedWrites(a.gw, resource) == 1 })

	retry := b.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, "k72"), debit(account, 300))
	if retry.Status != http.StatusServiceUnavailable || retry.Problem.Outcome != "unknown" ||
		!strings.Contains(retry.Problem.Detail, "retry only with the same key") {
		t.Fatalf("retry: %d %s, want 503 with outcome unknown: the first attempt may still apply", retry.Status, retry.Body)
	}
	unblock()
	if r := <-inFlight; r.Status != http.StatusOK {
		t.Fatalf("the credit in flight: %d %s", r.Status, r.Body)
	}
	if r := <-first; r.Status != http.StatusOK || r.Header.Get(gateway.ReplayedHeader) != "" {
		t.Fatalf("first attempt: %d %s, want it applied", r.Status, r.Body)
	}
	if r := b.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, "k72"), debit(account, 300)); r.Status != http.StatusOK || r.Header.Get(gateway.ReplayedHeader) != "true" {
		t.Fatalf("a later retry: %d %s, want the first attempt's answer replayed", r.Status, r.Body)
	}
	if got := a.balance(account); got != 1000+10+1-300 {
		t.Fatalf("balance = %d, want %d: debited once", got, 1000+10+1-300)
	}
}

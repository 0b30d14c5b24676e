package gateway_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// closer keeps the connections a pool dialled, so a test can break them.
type closer struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (c *closer) wrap(conn net.Conn) net.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conns = append(c.conns, conn)
	return conn
}

func (c *closer) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
}

// TestQueuedWritesOutliveTheirLeader: writes queued behind a write in
// flight are handed that write's connection when it is done. Here the
// leader's connection breaks while it waits for a row lock: the leader gets
// 503 with outcome unknown, and its followers must still be applied, on a
// new connection, each exactly once.
func TestQueuedWritesOutliveTheirLeader(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic")) // coalesce is on by default
	var conns closer
	gw := wrappedGateway(t, h, func(*pgxpool.Config) {}, conns.wrap)
	const account, resource = "acct-93", "account/acct-93"
	l := h.mustAcquire(resource, 10, 0)
	defer h.release(l)
	if r := gw.write("credit", l.Token, debit(account, 100)); r.Status != http.StatusOK { // the fence row exists from here on
		t.Fatalf("first write: %d %s", r.Status, r.Body)
	}
	base := h.balance(account)

	unblock := blockFence(t, h, resource)
	leader := make(chan response, 1)
	go func() { leader <- gw.write("credit", l.Token, debit(account, 1)) }()
	waitUntilBlocked(t, h)
	const followers = 3
	answers := make(chan response, followers)
	for range followers {
		go func() { answers <- gw.write("credit", l.Token, debit(account, 10)) }()
	}
	waitOrFail(t, "the followers to queue", func() bool { return gateway.QueuedWrites(gw.gw, resource) == followers })

	conns.closeAll() // the leader's connection breaks while it waits
	if r := <-leader; r.Status != http.StatusServiceUnavailable || r.Problem.Outcome != "unknown" {
		t.Fatalf("leader with its connection broken: %d %s, want 503 outcome unknown", r.Status, r.Body)
	}
	unblock()
	for range followers {
		if r := <-answers; r.Status != http.StatusOK {
			t.Fatalf("a follower: %d %s, want 200", r.Status, r.Body)
		}
	}
	// The leader's write reached PostgreSQL whole and may commit once the
	// lock is free (+1), or not; the followers' (+30) are in exactly once.
	if got := h.balance(account) - base; got != 30 && got != 31 {
		t.Fatalf("balance moved by %d, want 30 or 31", got)
	}
}

// blockFence makes the next write of resource wait inside PostgreSQL: another
// session holds the resource's fence row until the returned func is called.
func blockFence(t *testing.T, h *harness, resource string) (unblock func()) {
	t.Helper()
	return testenv.LockFenceRow(t, h.pool, resource)
}

// waitUntilBlocked returns once a write waits for a fence row lock. A
// backend of a connection pgx closed may still run a fence (see
// TestArgumentThatDoesNotFitItsColumn), so a caller must keep such
// backends off the row it blocks: then the write waiting is the one under
// test.
func waitUntilBlocked(t *testing.T, h *harness) {
	t.Helper()
	blocked := func() bool {
		var n int
		_ = h.pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%fencegw.fence%'").Scan(&n)
		return n >= 1
	}
	if !testenv.WaitFor(10*time.Second, blocked) {
		t.Fatalf("timed out waiting for a write to wait for the fence row; the database's sessions:\n%s", sessions(h))
	}
}

// sessions describes what the test database's sessions are doing, for a
// failure message.
func sessions(h *harness) string {
	rows, err := h.pool.Query(context.Background(), "SELECT pid, state, coalesce(wait_event_type, ''), coalesce(wait_event, ''), left(query, 120) FROM pg_stat_activity WHERE datname = current_database()")
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var pid int
		var state, waitType, wait, query string
		if err := rows.Scan(&pid, &state, &waitType, &wait, &query); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "  %d %s %s/%s: %s\n", pid, state, waitType, wait, query)
	}
	fmt.Fprintf(&b, "  pool: %d of %d connections acquired, %d acquires so far found none idle\n", h.pool.Stat().AcquiredConns(), h.pool.Stat().MaxConns(), h.pool.Stat().EmptyAcquireCount())
	return b.String()
}

// TestQueuedReplayOnAFullPool: a keyed retry that queues behind a write in
// flight, for a key already completed, is answered with the stored
// response read on the connection the drainer holds; with a pool of one,
// waiting for a second connection would never end well.
func TestQueuedReplayOnAFullPool(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	gw := wrappedGateway(t, h, func(cfg *pgxpool.Config) { cfg.MaxConns = 1 }, func(c net.Conn) net.Conn { return c })
	const account, resource = "acct-77", "account/acct-77"
	l := h.mustAcquire(resource, 10, 0)
	defer h.release(l)
	keyedCredit := func() response {
		return gw.do(http.MethodPost, "/v1/ops/credit", keyed(l.Token, l.Token+"-k1"), debit(account, 5))
	}
	first := keyedCredit()
	if first.Status != http.StatusOK {
		t.Fatalf("first keyed write: %d %s", first.Status, first.Body)
	}

	unblock := blockFence(t, h, resource)
	leader := make(chan response, 1)
	go func() { leader <- gw.write("credit", l.Token, debit(account, 1)) }()
	waitUntilBlocked(t, h)
	retry, other := make(chan response, 1), make(chan response, 1)
	go func() { retry <- keyedCredit() }()
	waitOrFail(t, "the retry to queue", func() bool { return gateway.QueuedWrites(gw.gw, resource) == 1 })
	go func() { other <- gw.write("credit", l.Token, debit(account, 2)) }()
	waitOrFail(t, "the other write to queue", func() bool { return gateway.QueuedWrites(gw.gw, resource) == 2 })
	unblock()

	if r := <-retry; r.Status != http.StatusOK || r.Header.Get(gateway.ReplayedHeader) != "true" || string(r.Body) != string(first.Body) {
		t.Fatalf("queued retry of a completed key: %d %s (replayed %q), want the first answer replayed", r.Status, r.Body, r.Header.Get(gateway.ReplayedHeader))
	}
	for name, ch := range map[string]chan response{"leader": leader, "other": other} {
		if r := <-ch; r.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", name, r.Status, r.Body)
		}
	}
}

// TestRetriedAloneAfterTheConnectionBroke: a coalesced transaction refused at
// COMMIT (a deferred unique constraint) is retried write by write; when the
// connection breaks under the first of them, the rest get a new one and
// are applied, instead of being reported "unknown" without ever leaving.
func TestRetriedAloneAfterTheConnectionBroke(t *testing.T) {
	pol := strings.Replace(demoPolicy(t, "monotonic"), "\noperations:\n", "\noperations:\n"+tagPolicy, 1)
	h := newHarness(t, pol)
	if _, err := h.pool.Exec(t.Context(), `CREATE TABLE demo.tags (account text, tag text,
		UNIQUE (account, tag) DEFERRABLE INITIALLY DEFERRED)`); err != nil {
		t.Fatal(err)
	}
	var cut cutter
	gw := cuttableGateway(t, h, &cut, pgx.QueryExecModeExec) // one Sync per batch: the cut is where it is counted
	const account, resource = "acct-55", "account/acct-55"
	l := h.mustAcquire(resource, 10, 0)
	defer h.release(l)
	tag := func(s string) response {
		return gw.write("tag", l.Token, fmt.Sprintf(`{"account": %q, "tag": %q}`, account, s))
	}
	if r := tag("t0"); r.Status != http.StatusOK {
		t.Fatalf("first write: %d %s", r.Status, r.Body)
	}

	unblock := blockFence(t, h, resource)
	leader := make(chan response, 1)
	go func() { leader <- tag("lead") }()
	waitUntilBlocked(t, h)
	var queued []chan response
	for i, s := range []string{"t1", "t1", "t2"} {
		ch := make(chan response, 1)
		queued = append(queued, ch)
		go func() { ch <- tag(s) }()
		waitOrFail(t, "a write to queue", func() bool { return gateway.QueuedWrites(gw.gw, resource) == i+1 })
	}
	// Batches from here: the coalesced transaction (unkeyed writes: one
	// implicit transaction, its commit refused), then the first write
	// retried alone, cut.
	cut.arm(2)
	unblock()
	if r := <-leader; r.Status != http.StatusOK {
		t.Fatalf("leader: %d %s", r.Status, r.Body)
	}
	answers := make([]response, len(queued))
	for i, ch := range queued {
		answers[i] = <-ch
	}
	if r := answers[0]; r.Status != http.StatusServiceUnavailable || r.Problem.Outcome != "unknown" {
		t.Fatalf("the write whose connection was cut: %d %s, want 503 unknown", r.Status, r.Body)
	}
	if r := answers[2]; r.Status != http.StatusOK {
		t.Fatalf("t2, after the cut: %d %s, want 200 on a new connection", r.Status, r.Body)
	}
	// The second t1 met the first (committed after its cut) or went first.
	if r := answers[1]; r.Status != http.StatusOK && r.Problem.Kind() != "constraint" {
		t.Fatalf("the second t1: %d %s, want 200 or 409 constraint", r.Status, r.Body)
	}
	var tags []string
	waitOrFail(t, "the tags to settle", func() bool {
		tags = nil
		rows, err := h.pool.Query(t.Context(), "SELECT tag FROM demo.tags ORDER BY tag")
		if err != nil {
			return false
		}
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			tags = append(tags, s)
		}
		return rows.Err() == nil && strings.Join(tags, ",") == "lead,t0,t1,t2"
	})
}

// waitOrFail waits for an event, not a duration: the bound is generous.
func waitOrFail(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !testenv.WaitFor(10*time.Second, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

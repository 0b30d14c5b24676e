package gateway_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/gateway"
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

	ctx := context.Background()
	blocker, err := h.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(ctx)
	if _, err := blocker.Exec(ctx, "SELECT 1 FROM fencegw.fences WHERE resource = $1 FOR UPDATE", resource); err != nil {
		t.Fatal(err)
	}

	leader := make(chan response, 1)
	go func() { leader <- gw.write("credit", l.Token, debit(account, 1)) }()
	waitOrFail(t, "the leader to wait for the fence row", func() bool {
		var n int
		_ = h.pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%fencegw.fence%'").Scan(&n)
		return n == 1
	})
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
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
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

// waitOrFail waits for an event, not a duration: the bound is generous.
func waitOrFail(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !waitFor(10*time.Second, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestAStuckWriteEndsAtItsWriteTimeout: a write whose fence row another
// transaction holds, on sessions with no lock_timeout to end the wait,
// ends at the gateway's write timeout: 503 with its outcome unknown (its
// commit was sent), its statement cancelled on the server, and nothing of
// it lands once the row is free.
func TestAStuckWriteEndsAtItsWriteTimeout(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	cfg, err := pgxpool.ParseConfig(h.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = "0"
	fence.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, _, base := gatewayWithPool(t, pool, h.auth, h.policy, func(c *gateway.Config) { c.WriteTimeout = time.Second })
	short := &harness{t: t, base: base, pool: h.pool}
	l := h.mustAcquire("account/acct-98", 10, 0)
	defer h.release(l)
	if r := short.write("credit", l.Token, debit("acct-98", 1)); r.Status != http.StatusOK {
		t.Fatalf("first write: %d %s", r.Status, r.Body)
	}
	unlock := testenv.LockFenceRow(t, h.pool, "account/acct-98")
	before := h.state()
	r := short.write("credit", l.Token, debit("acct-98", 1))
	if r.Status != http.StatusServiceUnavailable || r.Problem.Outcome != "unknown" {
		t.Fatalf("write behind a held fence row past the write timeout: %d %s, want 503 unknown", r.Status, r.Body)
	}
	waitOrFail(t, "the stuck statement to be cancelled on the server", func() bool {
		return testenv.LockWaiters(h.pool, "%fencegw.fence%") == 0
	})
	unlock()
	if after := h.state(); after != before {
		t.Fatal("state changed once the fence row was free")
	}
}

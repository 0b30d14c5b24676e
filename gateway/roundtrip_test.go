package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/fence"
)

// tripCounter counts round trips on a connection: a write that follows a
// read (or comes first) starts one. A pipelined batch is one write burst
// answered by one read burst, however many statements it holds.
type tripCounter struct {
	mu        sync.Mutex
	trips     int
	lastWrite bool
}

type countingConn struct {
	net.Conn
	c *tripCounter
}

func (cc countingConn) Write(b []byte) (int, error) {
	cc.c.mu.Lock()
	if !cc.c.lastWrite {
		cc.c.trips++
	}
	cc.c.lastWrite = true
	cc.c.mu.Unlock()
	return cc.Conn.Write(b)
}

func (cc countingConn) Read(b []byte) (int, error) {
	n, err := cc.Conn.Read(b)
	cc.c.mu.Lock()
	cc.c.lastWrite = false
	cc.c.mu.Unlock()
	return n, err
}

func (c *tripCounter) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.trips
	c.trips = 0
	return n
}

// TestOneRoundTripPerWrite counts the round trips between the gateway and
// PostgreSQL: an accepted write, whatever its number of statements, costs
// exactly one; an idempotent one two. Counted, not timed.
func TestOneRoundTripPerWrite(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	var trips tripCounter
	counted := countedGateway(t, h, &trips)
	l := h.mustAcquire("account/acct-97", 10, 0)
	defer h.release(l)
	m := h.mustAcquire("account/acct-96", 10, 0)
	defer h.release(m)
	transfer := `{"operation": "transfer", "args": ` + transferBody("acct-97", "acct-96", 1) + fmt.Sprintf(`, "token": {"from": %q, "to": %q}}`, l.Token, m.Token)
	for _, tt := range []struct {
		name, path string
		header     http.Header
		body       string
		want       int
	}{
		{"debit: fence + UPDATE…RETURNING + INSERT", "/v1/ops/debit", tok(l.Token), debit("acct-97", 1), 1},
		{"keyed debit: claim + fence + statements, then store + COMMIT", "/v1/ops/debit", keyed(l.Token, "rt-1"), debit("acct-97", 1), 2},
		{"transfer: two fences + statements", "/v1/ops/transfer", roleTokens(l.Token, m.Token), transferBody("acct-97", "acct-96", 1), 1},
		{"keyed transfer", "/v1/ops/transfer", http.Header{"Fencing-Token": roleTokens(l.Token, m.Token)["Fencing-Token"], "Idempotency-Key": {"rt-2"}}, transferBody("acct-97", "acct-96", 1), 2},
		{"batch of a debit and a transfer", "/v1/batch", nil, batchBody(batchWrite("debit", debit("acct-97", 1), `"`+l.Token+`"`), transfer), 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			warm := tt.header.Clone()
			if k := warm.Get("Idempotency-Key"); k != "" {
				warm.Set("Idempotency-Key", k+"-warm")
			}
			if r := counted.do(http.MethodPost, tt.path, warm, tt.body); r.Status != http.StatusOK {
				t.Fatalf("warm-up: %d %s", r.Status, r.Body)
			}
			trips.take()
			if r := counted.do(http.MethodPost, tt.path, tt.header, tt.body); r.Status != http.StatusOK {
				t.Fatalf("write: %d %s", r.Status, r.Body)
			}
			if got := trips.take(); got != tt.want {
				t.Fatalf("%d round trips to PostgreSQL, want %d", got, tt.want)
			}
		})
	}
}

// countedGateway serves the demo policy through a one-connection pool
// whose round trips are counted.
func countedGateway(t *testing.T, h *harness, trips *tripCounter) *harness {
	return wrappedGateway(t, h, func(cfg *pgxpool.Config) { cfg.MaxConns = 1 },
		func(conn net.Conn) net.Conn { return countingConn{conn, trips} })
}

// wrappedGateway serves the demo policy through a pool of its own, set up
// by configure, whose connections to PostgreSQL are wrapped by wrap.
func wrappedGateway(t *testing.T, h *harness, configure func(*pgxpool.Config), wrap func(net.Conn) net.Conn) *harness {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(h.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	configure(cfg)
	var d net.Dialer
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return wrap(conn), nil
	}
	fence.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return h.onPool(pool)
}

// cutter closes a connection right after it sent the n-th batch from when
// it was armed: the whole request reached PostgreSQL, its answer never
// comes back. A batch is recognised by the Sync that ends it, which is not
// how the pool's health pings, redials or cancel requests end, so the cut
// lands where the test means it whatever the pool does in between.
type cutter struct {
	mu      sync.Mutex
	batches int // cut after this many more batches; 0: disarmed
}

// syncMessage is the protocol's Sync: it ends a batch, and commits an
// implicit transaction.
var syncMessage = []byte{'S', 0, 0, 0, 4}

func (c *cutter) arm(batches int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches = batches
}

type cuttableConn struct {
	net.Conn
	c *cutter
}

func (cc cuttableConn) Write(b []byte) (int, error) {
	cc.c.mu.Lock()
	cut := false
	if cc.c.batches > 0 && bytes.HasSuffix(b, syncMessage) {
		cc.c.batches--
		cut = cc.c.batches == 0
	}
	cc.c.mu.Unlock()
	n, err := cc.Conn.Write(b)
	if cut {
		cc.Conn.Close()
	}
	return n, err
}

// cuttableGateway serves the demo policy through a pool whose connections
// the cutter can break.
func cuttableGateway(t *testing.T, h *harness, c *cutter, mode pgx.QueryExecMode) *harness {
	return wrappedGateway(t, h, func(cfg *pgxpool.Config) { cfg.ConnConfig.DefaultQueryExecMode = mode },
		func(conn net.Conn) net.Conn { return cuttableConn{conn, c} })
}

// TestConnectionLostMidWrite cuts the connection right after a write's
// batch reached PostgreSQL. The gateway cannot know whether it committed
// and must say so (outcome "unknown"); a retry with the same
// Idempotency-Key then applies the write exactly once. Both statement
// modes are cut: pgx reports a read that fails after the batch went out
// differently in each, once as an error it calls safe to retry.
func TestConnectionLostMidWrite(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	for i, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec} {
		t.Run(mode.String(), func(t *testing.T) {
			var cut cutter
			gw := cuttableGateway(t, h, &cut, mode)
			account := fmt.Sprintf("acct-%d", 90+i)
			l := h.mustAcquire("account/"+account, 10, 0)
			defer h.release(l)
			base := h.balance(account)
			warmUp := func(key string) { // prepares the statements on a new connection
				for _, hdr := range []http.Header{keyed(l.Token, l.Token+key), nil} {
					if hdr == nil {
						hdr = http.Header{}
						hdr.Set("Fencing-Token", l.Token)
					}
					if r := gw.do(http.MethodPost, "/v1/ops/credit", hdr, debit(account, 100)); r.Status != http.StatusOK {
						t.Fatalf("warm-up: %d %s", r.Status, r.Body)
					}
				}
			}

			warmUp("warm-1")
			cut.arm(1) // a lone write is one batch
			if r := gw.write("credit", l.Token, debit(account, 1)); r.Status != http.StatusServiceUnavailable || r.Problem.Outcome != "unknown" {
				t.Fatalf("write with the connection cut: %d %s, want 503 with outcome unknown", r.Status, r.Body)
			}

			// A keyed write's first batch holds no COMMIT: cut there, the
			// server rolls it back, so this attempt was not applied; but
			// an earlier attempt with its key, elsewhere, might still be,
			// so the key's outcome is unknown.
			warmUp("warm-3")
			cut.arm(1)
			before := h.balance(account)
			if r := gw.do(http.MethodPost, "/v1/ops/credit", keyed(l.Token, l.Token+"lost-0"), debit(account, 1000)); r.Status != http.StatusServiceUnavailable ||
				r.Problem.Outcome != "unknown" || !strings.Contains(r.Problem.Detail, "this attempt was not applied") {
				t.Fatalf("keyed write cut before its COMMIT: %d %s, want 503 outcome unknown, this attempt not applied", r.Status, r.Body)
			}
			// (The cut lone write above may still commit its +1.)
			if moved := h.balance(account) - before; moved != 0 && moved != 1 {
				t.Fatalf("a keyed write cut before its COMMIT moved the balance by %d", moved)
			}

			warmUp("warm-2")
			hdr := keyed(l.Token, l.Token+"lost-1") // unique per lease: -count=N reuses the database
			cut.arm(2)                              // a keyed write's second batch stores the response and COMMITs
			if r := gw.do(http.MethodPost, "/v1/ops/credit", hdr, debit(account, 10)); r.Status != http.StatusServiceUnavailable || r.Problem.Outcome != "unknown" {
				t.Fatalf("keyed write with the COMMIT cut: %d %s, want 503 outcome unknown", r.Status, r.Body)
			}
			for i := range 2 {
				if r := gw.do(http.MethodPost, "/v1/ops/credit", hdr, debit(account, 10)); r.Status != http.StatusOK {
					t.Fatalf("retry %d with the same key: %d %s", i, r.Status, r.Body)
				}
			}
			// Six warm-up writes (+600); the cut lone write (+1) may or may
			// not have committed, and may do so after its 503; the keyed
			// one (+10) must be in exactly once.
			if got := h.balance(account) - base - 600; got != 10 && got != 11 {
				t.Fatalf("balance moved by 600%+d, want 600+10 or 600+11: the keyed write applied exactly once", got)
			}
		})
	}
}

// TestLockTimeoutIsNotApplied: a write that waits for its fence row longer
// than the session's lock_timeout (serve sets it to the write timeout) is
// refused with 503 not-applied, and nothing of it lands.
func TestLockTimeoutIsNotApplied(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	cfg, err := pgxpool.ParseConfig(h.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = "200"
	fence.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, _, base := gatewayWithPool(t, pool, h.auth, h.policy)
	short := &harness{t: t, base: base, pool: h.pool}
	l := h.mustAcquire("account/acct-99", 10, 0)
	defer h.release(l)
	if r := short.write("credit", l.Token, debit("acct-99", 1)); r.Status != http.StatusOK {
		t.Fatalf("first write: %d %s", r.Status, r.Body)
	}

	tx, err := h.pool.Begin(t.Context()) // another session holds the fence row
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), "SELECT 1 FROM fencegw.fences WHERE resource = 'account/acct-99' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	before := h.state()
	r := short.write("credit", l.Token, debit("acct-99", 1))
	if r.Status != http.StatusServiceUnavailable || r.Problem.Outcome != "not-applied" {
		t.Fatalf("write behind a held fence row: %d %s, want 503 not-applied", r.Status, r.Body)
	}
	if after := h.state(); after != before {
		t.Fatal("state changed")
	}
}

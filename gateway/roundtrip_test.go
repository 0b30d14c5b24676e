package gateway_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
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
	cfg, err := pgxpool.ParseConfig(h.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1 // one connection: its statement cache is warm after the first write
	var d net.Dialer
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		return countingConn{conn, &trips}, err
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, base := gatewayWithPool(t, pool, h.auth)
	counted := &harness{t: t, base: base, pool: h.pool}

	l := h.mustAcquire("account/acct-97", 10, 0)
	defer h.release(l)
	for _, tt := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"debit: fence + UPDATE…RETURNING + INSERT", nil, 1},
		{"keyed debit: claim + fence + statements, then store + COMMIT", map[string]string{"Idempotency-Key": "rt-1"}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hdr := tok(l.Token)
			for k, v := range tt.headers {
				hdr.Set(k, v+"-warm")
			}
			if r := counted.do(http.MethodPost, "/v1/ops/debit", hdr, debit("acct-97", 1)); r.Status != http.StatusOK {
				t.Fatalf("warm-up: %d %s", r.Status, r.Body)
			}
			for k, v := range tt.headers {
				hdr.Set(k, v)
			}
			trips.take()
			if r := counted.do(http.MethodPost, "/v1/ops/debit", hdr, debit("acct-97", 1)); r.Status != http.StatusOK {
				t.Fatalf("write: %d %s", r.Status, r.Body)
			}
			if got := trips.take(); got != tt.want {
				t.Fatalf("%d round trips to PostgreSQL, want %d", got, tt.want)
			}
		})
	}
}

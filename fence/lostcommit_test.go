package fence_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// commitDropper, armed, closes the connection instead of sending the next
// batch that carries a COMMIT: the transaction never commits, and its
// requests are not told so by PostgreSQL.
type commitDropper struct{ armed atomic.Bool }

type droppingConn struct {
	net.Conn
	d *commitDropper
}

func (c droppingConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("COMMIT")) && c.d.armed.CompareAndSwap(true, false) {
		c.Conn.Close()
		return 0, net.ErrClosed
	}
	return c.Conn.Write(b)
}

// storeDialing is a Store configured as cfg on a pool of conns connections
// to d, each wrapped by wrap.
func storeDialing(t *testing.T, d *db, conns int32, wrap func(net.Conn) net.Conn, cfg fence.Config) *fence.Store {
	t.Helper()
	pc, err := pgxpool.ParseConfig(d.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	pc.MaxConns = conns
	var dialer net.Dialer
	pc.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return wrap(c), nil
	}
	fence.ConfigurePool(pc)
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	cfg.Pool = pool
	st, err := fence.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestALostCommitTakesBackTheRefusalsInIt is issue 23's case B: writes A
// (token 1:10) and B (1:9) of one account share a transaction; A advances
// the fence, B is refused in its savepoint as stale against 1:10. Then
// the COMMIT never reaches PostgreSQL. A is rightly not applied, but B's
// refusal was judged against A's write, which never committed: the fence
// is still at 1:8. B is decided again alone, and applied, instead of being
// told "stale, the fence is at 1:10".
func TestALostCommitTakesBackTheRefusalsInIt(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(map[bool]string{false: "unkeyed", true: "keyed"}[keyed], func(t *testing.T) {
			d := newDB(t)
			dropper := &commitDropper{}
			gs := &groupStore{Store: storeDialing(t, d, 2, func(c net.Conn) net.Conn { return droppingConn{c, dropper} }, fence.Config{})}
			ctx := context.Background()
			if _, err := gs.Apply(ctx, mustRequest(t, credit(d, "acct-85", 7))); err != nil { // the fence row exists from here on
				t.Fatal(err)
			}
			unblock := testenv.LockFenceRow(t, d.pool, "account/acct-85")
			inFlight := gs.applyAsync(t, credit(d, "acct-85", 8))
			waitFor(t, "a write to wait for the fence row", func() bool { return testenv.LockWaiters(d.pool, "%fencegw.fence%") == 1 })
			send := func(key string, rev int64) <-chan reply {
				if keyed {
					return gs.applyKeyedAsync(t, key, credit(d, "acct-85", rev))
				}
				return gs.applyAsync(t, credit(d, "acct-85", rev))
			}
			a := send("ka", 10)
			waitFor(t, "A to queue", func() bool { return gs.Queued("account/acct-85") == 1 })
			b := send("kb", 9)
			waitFor(t, "B to queue", func() bool { return gs.Queued("account/acct-85") == 2 })
			dropper.armed.Store(true)
			unblock()
			if o := <-inFlight; o.err != nil {
				t.Fatalf("the write in flight: %v", o.err)
			}
			if o := <-a; !errors.Is(o.err, fence.ErrUnavailable) {
				t.Fatalf("A, its COMMIT lost: %v, want unavailable", o.err)
			}
			var stale *fence.StaleTokenError
			o := <-b
			if errors.As(o.err, &stale) {
				t.Fatalf("B: %v: judged against A's write, whose COMMIT was lost", o.err)
			}
			if o.err != nil {
				t.Fatalf("B: %v, want it applied alone (the fence is at 1:8)", o.err)
			}
			if dropper.armed.Load() {
				t.Fatal("no COMMIT was dropped: the test did not test")
			}
			if got := d.fence("account/acct-85"); got != "1:9#3" {
				t.Fatalf("fence = %s, want 1:9#3: B applied alone after the writes of 1:7 and 1:8", got)
			}
			if got := d.balance("acct-85"); got != 1003 {
				t.Fatalf("balance = %d, want 1003: credited by 1:7, 1:8 and B, not A", got)
			}
		})
	}
}

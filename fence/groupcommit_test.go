package fence_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// commitGate holds, while armed, any batch that carries a COMMIT on its
// way to PostgreSQL, until opened: what a transaction's callers are told
// before its COMMIT went through can then be looked at.
type commitGate struct {
	mu     sync.Mutex
	armed  bool
	held   chan struct{} // closed when a COMMIT is held
	opened chan struct{}
}

func newCommitGate() *commitGate {
	return &commitGate{held: make(chan struct{}), opened: make(chan struct{})}
}

func (g *commitGate) arm() { g.mu.Lock(); g.armed = true; g.mu.Unlock() }

type gatedConn struct {
	net.Conn
	g     *commitGate
	trips *tripCounter
}

func (c gatedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.trips.read()
	return n, err
}

func (c gatedConn) Write(b []byte) (int, error) {
	c.trips.write()
	c.g.mu.Lock()
	hold := c.g.armed && bytes.Contains(b, []byte("COMMIT"))
	if hold {
		c.g.armed = false
		close(c.g.held)
	}
	c.g.mu.Unlock()
	if hold {
		<-c.g.opened
	}
	return c.Conn.Write(b)
}

// tripCounter counts round trips on a connection: a write that follows a
// read (or comes first) starts one.
type tripCounter struct {
	mu        sync.Mutex
	trips     int
	lastWrite bool
}

func (c *tripCounter) write() {
	c.mu.Lock()
	if !c.lastWrite {
		c.trips++
	}
	c.lastWrite = true
	c.mu.Unlock()
}

func (c *tripCounter) read() {
	c.mu.Lock()
	c.lastWrite = false
	c.mu.Unlock()
}

func (c *tripCounter) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.trips
	c.trips = 0
	return n
}

// groupStore is a Store with group commit on a pool of conns connections,
// whose COMMITs pass gate and whose round trips are counted, recording the
// size of every transaction.
type groupStore struct {
	*fence.Store
	trips tripCounter
	mu    sync.Mutex
	sizes []int
}

func newGroupStore(t *testing.T, d *db, conns int32, gate *commitGate) *groupStore {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(d.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = conns
	var dialer net.Dialer
	gs := &groupStore{}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return gatedConn{Conn: c, g: gate, trips: &gs.trips}, nil
	}
	fence.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	gs.Store, err = fence.New(fence.Config{Pool: pool, GroupCommit: true, OnTransaction: func(n int) {
		gs.mu.Lock()
		gs.sizes = append(gs.sizes, n)
		gs.mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

func (gs *groupStore) transactions() []int {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	return slices.Clone(gs.sizes)
}

// reply is one request's answer.
type reply struct {
	resp fence.Response
	err  error
}

// applyAsync applies writes as one request on its own goroutine.
func (gs *groupStore) applyAsync(t *testing.T, writes ...fence.Write) <-chan reply {
	t.Helper()
	req, err := fence.NewRequest(writes, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan reply, 1)
	go func() {
		resp, err := gs.Apply(context.Background(), req)
		ch <- reply{resp, err}
	}()
	return ch
}

// applyKeyedAsync applies writes as one request with an idempotency key.
func (gs *groupStore) applyKeyedAsync(t *testing.T, key string, writes ...fence.Write) <-chan reply {
	t.Helper()
	req, err := fence.NewRequest(writes, &fence.IdempotencyKey{Client: "t", Scope: "credit", Value: key, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan reply, 1)
	go func() {
		resp, err := gs.Apply(context.Background(), req)
		ch <- reply{resp, err}
	}()
	return ch
}

// occupy takes the store's one connection with a write of account that
// waits for its fence row, locked by the test, and returns what lets it go.
func occupy(t *testing.T, d *db, gs *groupStore, account string) (release func(), done <-chan reply) {
	t.Helper()
	if _, err := gs.Apply(context.Background(), mustRequest(t, credit(d, account, 1))); err != nil { // the fence row exists
		t.Fatal(err)
	}
	ctx := context.Background()
	blocker, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blocker.Rollback(ctx) })
	if _, err := blocker.Exec(ctx, "SELECT 1 FROM fencegw.fences WHERE resource = $1 FOR UPDATE", "account/"+account); err != nil {
		t.Fatal(err)
	}
	done = gs.applyAsync(t, credit(d, account, 1))
	waitFor(t, "the occupying write to wait for its fence row", func() bool {
		var n int
		_ = d.pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&n)
		return n == 1
	})
	return func() { _ = blocker.Rollback(ctx) }, done
}

func mustRequest(t *testing.T, writes ...fence.Write) *fence.Request {
	t.Helper()
	req, err := fence.NewRequest(writes, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !testenv.WaitFor(20*time.Second, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestGroupCommitOneCommitForManyResources: unkeyed writes of five
// resources that wait for the one connection are applied as one implicit
// inLine starts each write and waits until it waits in line for a
// connection, so they are all there when the occupying write lets go.
func inLine(t *testing.T, gs *groupStore, starts ...func() <-chan reply) []<-chan reply {
	t.Helper()
	var waiting []<-chan reply
	for i, start := range starts {
		waiting = append(waiting, start())
		waitFor(t, "the write to wait in line", func() bool { return gs.WaitingForConnection() == i+1 })
	}
	return waiting
}

// each wraps writes as starts for inLine.
func each(t *testing.T, gs *groupStore, writes ...fence.Write) []func() <-chan reply {
	starts := make([]func() <-chan reply, len(writes))
	for i, w := range writes {
		starts[i] = func() <-chan reply { return gs.applyAsync(t, w) }
	}
	return starts
}

// settled lets the occupying write go and returns the answers of waiting.
func settled(t *testing.T, release func(), first <-chan reply, waiting []<-chan reply) []reply {
	t.Helper()
	release()
	if o := <-first; o.err != nil {
		t.Fatalf("the occupying write: %v", o.err)
	}
	out := make([]reply, len(waiting))
	for i, ch := range waiting {
		out[i] = <-ch
	}
	return out
}

// credited checks each account got the one cent credited to it, once.
func credited(t *testing.T, d *db, accounts ...string) {
	t.Helper()
	for _, a := range accounts {
		if got := d.balance(a); got != 1001 {
			t.Errorf("%s = %d, want 1001: credited once", a, got)
		}
	}
}

// groupedIn checks one transaction carried n writes.
func groupedIn(t *testing.T, gs *groupStore, n int) {
	t.Helper()
	if sizes := gs.transactions(); !slices.Contains(sizes, n) {
		t.Fatalf("transactions of %v writes, want one of %d", sizes, n)
	}
}

// transaction: one round trip on the wire, one commit.
func TestGroupCommitOneCommitForManyResources(t *testing.T) {
	d := newDB(t)
	gs := newGroupStore(t, d, 1, newCommitGate())
	group := func(accounts ...string) (trips int) {
		release, first := occupy(t, d, gs, "acct-20")
		var writes []fence.Write
		for _, a := range accounts {
			writes = append(writes, credit(d, a, 1))
		}
		waiting := inLine(t, gs, each(t, gs, writes...)...)
		gs.trips.take()
		for i, o := range settled(t, release, first, waiting) {
			if o.err != nil {
				t.Errorf("%s: %v", accounts[i], o.err)
			}
		}
		credited(t, d, accounts...)
		groupedIn(t, gs, len(accounts))
		return gs.trips.take()
	}
	// The connection's first group prepares the group's lock_timeout
	// statement (pgx caches it from then on): a round trip of its own.
	group("acct-26", "acct-27")
	accounts := []string{"acct-21", "acct-22", "acct-23", "acct-24", "acct-25"}
	if n := group(accounts...); n != 1 {
		t.Errorf("%d round trips for the group of %d writes, want 1", n, len(accounts))
	}
}

// TestGroupCommitAnswersAfterTheCommit: keyed writes of several resources
// share an explicit transaction (their answers are stored with its
// COMMIT), and none of them is answered while that COMMIT is held on its
// way to PostgreSQL.
func TestGroupCommitAnswersAfterTheCommit(t *testing.T) {
	d := newDB(t)
	gate := newCommitGate()
	gs := newGroupStore(t, d, 1, gate)
	release, first := occupy(t, d, gs, "acct-50")
	accounts := []string{"acct-51", "acct-52", "acct-53"}
	var starts []func() <-chan reply
	for _, a := range accounts {
		starts = append(starts, func() <-chan reply { return gs.applyKeyedAsync(t, "k-"+a, credit(d, a, 1)) })
	}
	waiting := inLine(t, gs, starts...)
	gate.arm()
	release()
	if o := <-first; o.err != nil {
		t.Fatalf("the occupying write: %v", o.err)
	}
	<-gate.held
	for i, ch := range waiting {
		select {
		case o := <-ch:
			t.Fatalf("%s answered (%v) while its transaction's COMMIT had not reached PostgreSQL", accounts[i], o.err)
		default:
		}
	}
	close(gate.opened)
	for i, ch := range waiting {
		if o := <-ch; o.err != nil {
			t.Errorf("%s: %v", accounts[i], o.err)
		}
	}
	credited(t, d, accounts...)
	groupedIn(t, gs, len(accounts))
}

// TestGroupCommitIsolatesAFailingWrite: in a group, a write whose
// precondition fails rolls back alone, to its savepoint; the others of
// other resources commit.
func TestGroupCommitIsolatesAFailingWrite(t *testing.T) {
	d := newDB(t)
	gs := newGroupStore(t, d, 1, newCommitGate())
	release, first := occupy(t, d, gs, "acct-26")
	writes := []fence.Write{credit(d, "acct-27", 1), debit(d, "acct-28", 5000, 1), credit(d, "acct-29", 1)}
	for i, o := range settled(t, release, first, inLine(t, gs, each(t, gs, writes...)...)) {
		var pre *fence.PreconditionError
		if failing := i == 1; failing != errors.As(o.err, &pre) {
			t.Errorf("write %d: %v", i, o.err)
		}
	}
	for account, want := range map[string]int64{"acct-27": 1001, "acct-28": 1000, "acct-29": 1001} {
		if got := d.balance(account); got != want {
			t.Errorf("%s = %d, want %d", account, got, want)
		}
	}
	groupedIn(t, gs, 3)
}

// flakyOperation raises a serialization failure the first time any write
// calls it, as a write that met another transaction would.
const flakyOperation = `
  flaky:
    resource: account
    args:
      account: {type: string, max_length: 64, pattern: "acct-[0-9]+"}
    statements:
      - sql: SELECT demo.fail_once()
      - sql: UPDATE demo.accounts SET balance_cents = balance_cents + 1 WHERE id = :account
        expect_rows: 1
`

// failFirst makes flakyOperation's demo.fail_once raise a serialization
// failure on its first n calls: the sequence counting them is not rolled
// back with the transactions that call it.
func failFirst(t *testing.T, d *db, n int) {
	t.Helper()
	if _, err := d.pool.Exec(context.Background(), fmt.Sprintf(`CREATE SEQUENCE demo.fail_seq;
		CREATE FUNCTION demo.fail_once() RETURNS void LANGUAGE plpgsql AS $$
		BEGIN
			IF nextval('demo.fail_seq') <= %d THEN
				RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = 'made to fail';
			END IF;
		END $$`, n)); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommitRetriesAContendedWriteAlone: a write that fails with a
// serialization failure (or a deadlock) inside a group is rolled back to
// its savepoint and applied again alone once the group committed: the
// meeting may be the grouping's doing. It is applied exactly once.
func TestGroupCommitRetriesAContendedWriteAlone(t *testing.T) {
	d := newDB(t, flakyOperation)
	failFirst(t, d, 1)
	gs := newGroupStore(t, d, 1, newCommitGate())
	release, first := occupy(t, d, gs, "acct-30")
	writes := []fence.Write{credit(d, "acct-31", 1), d.write("flaky", `{"account": "acct-32"}`, tok(1)), credit(d, "acct-33", 1)}
	for i, o := range settled(t, release, first, inLine(t, gs, each(t, gs, writes...)...)) {
		if o.err != nil {
			t.Errorf("write %d: %v, want it applied (the flaky one on its second try)", i, o.err)
		}
	}
	credited(t, d, "acct-31", "acct-32", "acct-33")
	var calls int64
	if err := d.pool.QueryRow(context.Background(), "SELECT last_value FROM demo.fail_seq").Scan(&calls); err != nil || calls != 2 {
		t.Fatalf("the flaky write ran %d times (%v), want 2: once in the group, once alone", calls, err)
	}
}

// TestGroupCommitRetryAloneKeepsResourceOrder: a write that meets a
// serialization failure in its group, and again in the group's savepoint
// run, is retried alone after the commit; the later write of its resource
// queued behind it waits for that retry instead of committing first, which
// would make the first write's older token stale.
func TestGroupCommitRetryAloneKeepsResourceOrder(t *testing.T) {
	d := newDB(t, flakyOperation)
	failFirst(t, d, 2) // the group's first try and its savepoint run
	gs := newGroupStore(t, d, 1, newCommitGate())
	release, first := occupy(t, d, gs, "acct-70")
	w1 := gs.applyAsync(t, d.write("flaky", `{"account": "acct-70"}`, tok(1)))
	waitFor(t, "w1 to queue", func() bool { return gs.Queued("account/acct-70") == 1 })
	w2 := gs.applyAsync(t, credit(d, "acct-70", 2))
	waitFor(t, "w2 to queue", func() bool { return gs.Queued("account/acct-70") == 2 })
	release()
	if o := <-first; o.err != nil {
		t.Fatal(o.err)
	}
	if o := <-w1; o.err != nil {
		t.Errorf("w1 (arrived first, token 1): %v; want it applied on its retry, before w2", o.err)
	}
	if o := <-w2; o.err != nil {
		t.Errorf("w2 (token 2): %v", o.err)
	}
}

// TestGroupCommitKeepsEachResourcesOrder: a resource's requests that
// queued behind its unit in line commit after it, in arrival order, while
// another resource's unit shares the first transaction.
func TestGroupCommitKeepsEachResourcesOrder(t *testing.T) {
	d := newDB(t)
	gs := newGroupStore(t, d, 1, newCommitGate())
	release, first := occupy(t, d, gs, "acct-40")
	var waiting []<-chan reply
	send := func(account string, amount int, cond func() bool) {
		waiting = append(waiting, gs.applyAsync(t, d.write("credit", fmt.Sprintf(`{"account": %q, "amount_cents": %d}`, account, amount), tok(1))))
		waitFor(t, "the write to queue", cond)
	}
	send("acct-41", 1, func() bool { return gs.WaitingForConnection() == 1 })
	send("acct-41", 2, func() bool { return gs.Queued("account/acct-41") == 1 })
	send("acct-42", 1, func() bool { return gs.WaitingForConnection() == 2 })
	send("acct-41", 3, func() bool { return gs.Queued("account/acct-41") == 2 })
	for i, o := range settled(t, release, first, waiting) {
		if o.err != nil {
			t.Fatalf("write %d: %v", i, o.err)
		}
	}
	rows, err := d.pool.Query(context.Background(), "SELECT amount_cents FROM demo.write_log WHERE account = 'acct-41' ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var order []int64
	for rows.Next() {
		var a int64
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		order = append(order, a)
	}
	if !slices.Equal(order, []int64{1, 2, 3}) {
		t.Fatalf("acct-41's writes committed in the order %v, want 1 2 3 (arrival)", order)
	}
	groupedIn(t, gs, 2) // acct-41's first and acct-42's together
}

// TestGroupCommitGoesAroundAStuckWrite: with group commit, one transaction
// is in flight at a time, so that groups are large; but a write stuck on
// a row lock does not hold the line: once it has not moved for a while,
// another transaction starts on the pool's other connection, and a write
// of another resource commits while the stuck one still waits.
func TestGroupCommitGoesAroundAStuckWrite(t *testing.T) {
	d := newDB(t)
	gs := newGroupStore(t, d, 2, newCommitGate())
	release, stuck := occupy(t, d, gs, "acct-50")
	var o reply
	select {
	case o = <-gs.applyAsync(t, credit(d, "acct-51", 1)):
	case <-time.After(30 * time.Second): // a bound to fail by, not a speed
		t.Fatal("the write beside the stuck one still waits: the stuck write holds the line")
	}
	if o.err != nil {
		t.Fatalf("the write beside the stuck one: %v", o.err)
	}
	select {
	case o := <-stuck:
		t.Fatalf("the stuck write was answered (%v) while its fence row was locked", o.err)
	default:
	}
	credited(t, d, "acct-51")
	release()
	if o := <-stuck; o.err != nil {
		t.Fatalf("the stuck write, once let go: %v", o.err)
	}
	if got := d.balance("acct-50"); got != 1002 {
		t.Fatalf("acct-50 = %d, want 1002: both its writes applied once", got)
	}
}

// TestGroupCommitOneTransactionAtATime: with group commit, writes wait in
// line while one transaction is in flight, even with a connection free,
// and then go as one group: the largest groups, the fewest commits. (The
// spill that goes around a stuck write is turned off here; see
// TestGroupCommitGoesAroundAStuckWrite.)
func TestGroupCommitOneTransactionAtATime(t *testing.T) {
	d := newDB(t)
	gs := newGroupStore(t, d, 2, newCommitGate())
	fence.SetSpillAfter(gs.Store, time.Hour)
	release, first := occupy(t, d, gs, "acct-60")
	accounts := []string{"acct-61", "acct-62", "acct-63"}
	var writes []fence.Write
	for _, a := range accounts {
		writes = append(writes, credit(d, a, 1))
	}
	waiting := inLine(t, gs, each(t, gs, writes...)...) // fails if one starts on the free connection
	for i, o := range settled(t, release, first, waiting) {
		if o.err != nil {
			t.Errorf("%s: %v", accounts[i], o.err)
		}
	}
	credited(t, d, accounts...)
	groupedIn(t, gs, len(accounts))
}

// TestGroupCommitAStuckWriteFailsAlone: in a group, a write whose fence row
// another transaction holds (an operator's open transaction) fails once
// the group's lock timeout passes, unavailable and not applied, and so
// does the write of its resource queued behind it, without a wait of its
// own; the other writes of its group are applied. The session's
// lock_timeout is the group's deadline, as serve sets it.
func TestGroupCommitAStuckWriteFailsAlone(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(map[bool]string{false: "unkeyed", true: "keyed"}[keyed], func(t *testing.T) {
			d := newDB(t)
			gs := &groupStore{Store: storeWithLockTimeout(t, d, 1, "4000", fence.Config{GroupCommit: true, WriteTimeout: 4 * time.Second})}
			if _, err := gs.Apply(context.Background(), mustRequest(t, credit(d, "acct-81", 1))); err != nil { // the fence row exists from here on
				t.Fatal(err)
			}
			release, first := occupy(t, d, gs, "acct-80")
			testenv.LockFenceRow(t, d.pool, "account/acct-81")
			n := 0
			send := func(a string, queued func() bool) <-chan reply {
				n++
				var o <-chan reply
				if keyed {
					o = gs.applyKeyedAsync(t, fmt.Sprint("k-", n), credit(d, a, 1))
				} else {
					o = gs.applyAsync(t, credit(d, a, 1))
				}
				waitFor(t, "the write to queue", queued)
				return o
			}
			stuck := d.balance("acct-81")
			// The first group: acct-81's first write and acct-82's. The
			// next: acct-81's two later writes (one unit) and acct-82's.
			w0 := send("acct-81", func() bool { return gs.WaitingForConnection() == 1 })
			x0 := send("acct-82", func() bool { return gs.WaitingForConnection() == 2 })
			w1 := send("acct-81", func() bool { return gs.Queued("account/acct-81") == 1 })
			w2 := send("acct-81", func() bool { return gs.Queued("account/acct-81") == 2 })
			x1 := send("acct-82", func() bool { return gs.Queued("account/acct-82") == 1 })
			release()
			if o := <-first; o.err != nil {
				t.Fatal(o.err)
			}
			for i, w := range []<-chan reply{w0, w1, w2} {
				if o := <-w; !errors.Is(o.err, fence.ErrUnavailable) || errors.Is(o.err, fence.ErrOutcomeUnknown) {
					t.Errorf("acct-81's write %d, its fence row held: %v, want unavailable, not applied", i, o.err)
				}
			}
			for i, x := range []<-chan reply{x0, x1} {
				if o := <-x; o.err != nil {
					t.Errorf("acct-82's write %d, its fence row free: %v, want it applied", i, o.err)
				}
			}
			if got := d.balance("acct-81"); got != stuck {
				t.Errorf("acct-81's balance moved by %d: its write failed", got-stuck)
			}
			if got := d.balance("acct-82"); got != 1002 {
				t.Errorf("acct-82 = %d, want 1002: both its writes applied once", got)
			}
		})
	}
}

// TestALoneStuckWriteIsNotApplied: with the session's lock_timeout under
// the write's deadline, as serve sets it, a lone write whose fence row
// another transaction holds is refused by PostgreSQL, not applied, before
// its deadline would cancel it with an unknown outcome.
func TestALoneStuckWriteIsNotApplied(t *testing.T) {
	d := newDB(t)
	// Far under the deadline below, so that a loaded machine's delays
	// before the wait starts cannot let the deadline end it first.
	st := storeWithLockTimeout(t, d, 4, "1000", fence.Config{})
	ctx := context.Background()
	if _, err := st.Apply(ctx, mustRequest(t, credit(d, "acct-84", 1))); err != nil { // the fence row exists from here on
		t.Fatal(err)
	}
	testenv.LockFenceRow(t, d.pool, "account/acct-84")
	before := d.balance("acct-84")
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := st.Apply(wctx, mustRequest(t, credit(d, "acct-84", 1)))
	if !errors.Is(err, fence.ErrUnavailable) || errors.Is(err, fence.ErrOutcomeUnknown) {
		t.Fatalf("a lone write on a row held past its lock_timeout: %v, want unavailable, not applied", err)
	}
	if got := d.balance("acct-84"); got != before {
		t.Fatalf("balance moved by %d", got-before)
	}
}

// storeWithLockTimeout is a Store configured as cfg, on a pool of conns
// connections to d whose sessions' lock_timeout is ms, as serve sets it.
func storeWithLockTimeout(t *testing.T, d *db, conns int32, ms string, cfg fence.Config) *fence.Store {
	t.Helper()
	pc, err := pgxpool.ParseConfig(d.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	pc.MaxConns = conns
	pc.ConnConfig.RuntimeParams["lock_timeout"] = ms
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

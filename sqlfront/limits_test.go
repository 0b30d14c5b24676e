package sqlfront_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/sqlfront"
)

// TestConnectionLimits: a client may hold at most its share of the
// front's connections, so another client still gets in; past the front's
// own limit everyone is turned away, with 53300 naming the limit; a
// connection closed makes room again. A refused connection writes
// nothing, not even a fenced write it sent with its password.
func TestConnectionLimits(t *testing.T) {
	f := newFront(t, func(c *sqlfront.Config) { c.MaxConnections, c.MaxClientConnections = 3, 2 })
	ctx := context.Background()
	const account, resource = "acct-52", "account/acct-52"
	l := f.lease(billing, resource, 60, 0)
	before := f.state(account)
	write := "BEGIN; SET LOCAL fencegw.tokens = '" + resource + "=" + l.Token + "'; " + strings.Replace(debit, "%s", account, 1) + "; COMMIT"
	connect := func(client string) (*pgx.Conn, error) { return pgx.Connect(ctx, f.url(client)) }
	first := f.connect(billing)
	f.connect(billing)
	if _, err := connect(billing); sqlState(err) != "53300" || !strings.Contains(err.Error(), "client billing: at most 2") {
		t.Fatalf("billing's third connection: %v, want 53300 for the client", err)
	}
	// The connection just refused counts against the front's limit
	// until the front has hung up on it: until then this one may meet
	// the front's limit instead of the client's.
	var code, msg string
	if !testenv.WaitFor(time.Minute, func() bool {
		code, msg = f.dial().refusedWith(billing, write)
		return code == "53300" && strings.Contains(msg, "at most 2")
	}) {
		t.Fatalf("billing's third connection, a write sent with its password: %s %q, want 53300 for the client", code, msg)
	}
	// The last connection refused above counts against the front's limit
	// until the front has hung up on it: ledger's first may meet it.
	var third *pgx.Conn
	if !testenv.WaitFor(time.Minute, func() bool {
		c, err := connect(ledger)
		third = c
		return err == nil
	}) {
		t.Fatal("ledger cannot connect while billing holds its share")
	}
	defer third.Close(ctx)
	if _, err := connect(ledger); sqlState(err) != "53300" || !strings.Contains(err.Error(), "too many clients already: the SQL front serves at most 3") {
		t.Fatalf("a fourth connection: %v, want 53300 for the front", err)
	}
	if code, msg := f.dial().refusedWith(billing, write); code != "53300" || !strings.Contains(msg, "at most 3") {
		t.Fatalf("a fourth connection, a write sent with its password: %s %q, want 53300 for the front", code, msg)
	}
	if after := f.state(account); after != before {
		t.Fatalf("%s, was %s: a refused connection wrote", after, before)
	}
	first.Close(ctx)
	if !testenv.WaitFor(time.Minute, func() bool { return f.srv.Sessions()[billing] == 1 }) {
		t.Fatal("the closed session is still counted")
	}
	if !testenv.WaitFor(time.Minute, func() bool {
		c, err := connect(billing)
		if err == nil {
			c.Close(ctx)
		}
		return err == nil
	}) {
		t.Fatal("billing cannot connect again after closing a connection")
	}
}

// refusedWith sends a startup as client, its password and sql at once,
// without waiting for an answer, and returns the code and message of the
// last error before the connection ended.
func (r *rawClient) refusedWith(client, sql string) (code, message string) {
	r.t.Helper()
	f := r.front
	r.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": client, "database": f.db}},
		&pgproto3.PasswordMessage{Password: f.keys[client]}, &pgproto3.Query{String: sql})
	for {
		m, err := r.fe.Receive()
		if err != nil {
			return code, message
		}
		if e, ok := m.(*pgproto3.ErrorResponse); ok {
			code, message = e.Code, e.Message
		}
	}
}

// TestStatementTimeout: a fenced write waiting past the statement
// timeout is cancelled (57014) and fails its transaction, whose COMMIT
// rolls back: nothing written.
func TestStatementTimeout(t *testing.T) {
	f := newFront(t, func(c *sqlfront.Config) { c.StatementTimeout = 3 * time.Second })
	ctx := context.Background()
	const account, resource = "acct-51", "account/acct-51"
	l := f.lease(billing, resource, 60, 0)
	before := f.state(account)
	lock, err := f.gw.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, "SELECT pg_advisory_xact_lock(51)"); err != nil {
		t.Fatal(err)
	}
	r := f.login(billing)
	if errs := r.query("BEGIN; SET LOCAL fencegw.tokens = '" + resource + "=" + l.Token + "'; " + strings.Replace(debit, "%s", account, 1) +
		"; SELECT pg_advisory_xact_lock(51)"); len(errs) != 1 || errs[0].Code != "57014" {
		t.Fatalf("a statement past the statement timeout: %+v, want 57014", errs)
	}
	r.send(&pgproto3.Query{String: "COMMIT"})
	if m := r.receive(); !isTag(m, "ROLLBACK") {
		t.Fatalf("COMMIT of the cancelled transaction: %#v, want ROLLBACK", m)
	}
	r.until(ready)
	if after := f.state(account); after != before {
		t.Fatalf("%s, was %s: the cancelled transaction committed", after, before)
	}
}

func isTag(m pgproto3.BackendMessage, tag string) bool {
	c, ok := m.(*pgproto3.CommandComplete)
	return ok && string(c.CommandTag) == tag
}

// TestIdleTimeouts: a session idle in a fenced transaction past the
// idle-in-transaction timeout is ended (25P03) and its transaction
// rolled back: nothing written; one idle outside a transaction past the
// idle-session timeout is ended (57P05). Their backends go with them.
func TestIdleTimeouts(t *testing.T) {
	f := newFront(t, func(c *sqlfront.Config) { c.IdleInTransactionTimeout, c.IdleTimeout = 2*time.Second, 2*time.Second })
	const account, resource = "acct-53", "account/acct-53"
	l := f.lease(billing, resource, 60, 0)
	before := f.state(account)
	// Each session's query goes with its password, so that it is never
	// idle before it: only the waits the test means are.
	idle := f.dial()
	idle.loginWith(billing, "BEGIN; SET LOCAL fencegw.tokens = '"+resource+"="+l.Token+"'; "+strings.Replace(debit, "%s", account, 1))
	if errs := idle.until(ready); len(errs) != 0 {
		t.Fatalf("the fenced write: %+v", errs)
	}
	outside := f.dial()
	outside.loginWith(billing, "SELECT 1")
	if errs := outside.until(ready); len(errs) != 0 {
		t.Fatalf("SELECT 1: %+v", errs)
	}
	if code := idle.closedWith(); code != "25P03" {
		t.Fatalf("a session idle in its transaction: closed with %q, want 25P03", code)
	}
	if code := outside.closedWith(); code != "57P05" {
		t.Fatalf("a session idle outside a transaction: closed with %q, want 57P05", code)
	}
	if !testenv.WaitFor(time.Minute, func() bool { return f.backends() == 0 }) {
		t.Fatal("the ended sessions' backends outlived them")
	}
	if after := f.state(account); after != before {
		t.Fatalf("%s, was %s: the idle session's transaction committed", after, before)
	}
}

// TestNoTurnWritesNothing: with the only turn held, a fenced write waits
// for one at most the queue timeout and is refused with 53000, nothing
// of it sent to PostgreSQL, in the simple and the extended protocol (the
// front answers the Sync, and the session goes on); one the client
// cancels while it waits is refused with 57014. Nothing is written, and
// the session is served once the turn is given back.
func TestNoTurnWritesNothing(t *testing.T) {
	f := newFront(t, func(c *sqlfront.Config) { c.MaxTransactions, c.QueueTimeout = 1, 200*time.Millisecond })
	ctx := context.Background()
	const account, resource = "acct-62", "account/acct-62"
	l := f.lease(ledger, resource, 300, 0)
	before := f.state(account)
	holder := f.holdTurn(billing)
	f.turnsAre(map[string]string{billing: "1/0"})

	write := "BEGIN; SET LOCAL fencegw.tokens = '" + resource + "=" + l.Token + "'; " + strings.Replace(debit, "%s", account, 1) + "; COMMIT"
	r := f.login(ledger)
	if errs := r.query(write); len(errs) != 1 || errs[0].Code != "53000" || !strings.Contains(errs[0].Message, "limit of 1 transactions in flight") {
		t.Fatalf("a simple query without a turn: %+v, want 53000 naming the limit", errs)
	}
	conn := f.connect(ledger)
	if _, err := conn.Exec(ctx, "UPDATE demo.accounts SET balance_cents = balance_cents - $1 WHERE id = $2", 100, account); sqlState(err) != "53000" {
		t.Fatalf("a statement of the extended protocol without a turn: %v, want 53000", err)
	}

	// A wait cancelled: the front's key for the session, its CancelRequest.
	r.send(&pgproto3.Query{String: write})
	f.turnsAre(map[string]string{billing: "1/0", ledger: "0/1"})
	cancel := f.dial()
	cancel.send(&pgproto3.CancelRequest{ProcessID: r.pid, SecretKey: r.secret})
	cancel.closedWith()
	if errs := r.until(ready); len(errs) != 1 || errs[0].Code != "57014" {
		t.Fatalf("a wait the client cancelled: %+v, want 57014", errs)
	}
	if after := f.state(account); after != before {
		t.Fatalf("%s, was %s: a statement refused without a turn was written", after, before)
	}

	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT $1::int", 1); err != nil {
		t.Fatalf("the refused session once the turn is free: %v", err)
	}
	if errs := r.query("SELECT 1"); len(errs) != 0 {
		t.Fatalf("the cancelled session once the turn is free: %+v", errs)
	}
}

// loginWith logs in as client, sending sql with the password, and reads
// up to the greeting's ReadyForQuery.
func (r *rawClient) loginWith(client, sql string) {
	r.t.Helper()
	f := r.front
	r.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": client, "database": f.db}})
	if _, ok := r.receive().(*pgproto3.AuthenticationCleartextPassword); !ok {
		r.t.Fatal("no password asked for")
	}
	r.send(&pgproto3.PasswordMessage{Password: f.keys[client]}, &pgproto3.Query{String: sql})
	r.until(ready)
}

func ready(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.ReadyForQuery); return ok }

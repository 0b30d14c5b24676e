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
// own limit everyone is turned away, with 53300; a connection closed
// makes room again.
func TestConnectionLimits(t *testing.T) {
	f := newFront(t, func(c *sqlfront.Config) { c.MaxConnections, c.MaxClientConnections = 3, 2 })
	ctx := context.Background()
	connect := func(client string) (*pgx.Conn, error) { return pgx.Connect(ctx, f.url(client)) }
	first := f.connect(billing)
	f.connect(billing)
	if _, err := connect(billing); sqlState(err) != "53300" || !strings.Contains(err.Error(), "client billing") {
		t.Fatalf("billing's third connection: %v, want 53300 for the client", err)
	}
	f.connect(ledger)
	if _, err := connect(ledger); sqlState(err) != "53300" || !strings.Contains(err.Error(), "too many clients already") {
		t.Fatalf("a fourth connection: %v, want 53300 for the front", err)
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

// TestTimeouts: a statement running past the statement timeout is
// cancelled (57014); a session idle in a fenced transaction past the
// idle timeout is ended (25P03) and its transaction rolled back:
// nothing written, the fence row free again.
func TestTimeouts(t *testing.T) {
	f := newFront(t, func(c *sqlfront.Config) {
		c.IdleInTransactionTimeout, c.StatementTimeout = 500*time.Millisecond, 500*time.Millisecond
	})
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
	// Each session's query goes with its password, so that it is never
	// idle before it: only the waits the test means are.
	slow := f.dial()
	slow.loginWith(billing, "SELECT pg_advisory_xact_lock(51)")
	if errs := slow.until(ready); len(errs) != 1 || errs[0].Code != "57014" {
		t.Fatalf("a statement past the statement timeout: %+v, want 57014", errs)
	}
	idle := f.dial()
	idle.loginWith(billing, "BEGIN; SET LOCAL fencegw.tokens = '"+resource+"="+l.Token+"'; "+strings.Replace(debit, "%s", account, 1))
	if errs := idle.until(ready); len(errs) != 0 {
		t.Fatalf("the fenced write: %+v", errs)
	}
	if code := idle.closedWith(); code != "25P03" {
		t.Fatalf("a session idle in its transaction: closed with %q, want 25P03", code)
	}
	if !testenv.WaitFor(time.Minute, func() bool { return f.backends() == 1 }) { // the slow one, idle outside a transaction, stays
		t.Fatal("the idle session's backend outlived it")
	}
	if after := f.state(account); after != before {
		t.Fatalf("%s, was %s: the idle session's transaction committed", after, before)
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

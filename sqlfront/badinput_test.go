package sqlfront_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/sqlfront"
)

// TestBadStartup: each malformed or unsupported startup packet is
// answered with PostgreSQL's error and the connection closed; a newer
// minor version is negotiated down to 3.0, as PostgreSQL does; and the
// front still serves everyone else.
func TestBadStartup(t *testing.T) {
	f := newFront(t)
	params := func(kv ...string) []byte {
		var b []byte
		for _, s := range kv {
			b = append(append(b, s...), 0)
		}
		return append(b, 0)
	}
	for _, tc := range []struct {
		name string
		raw  []byte
		code string
	}{
		{"a length below the least", []byte{0, 0, 0, 4}, "08P01"},
		{"a length past the most", packet(u32(196608), make([]byte, 10001)), "08P01"},
		{"an HTTP request", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), "08P01"},
		{"protocol 2.0", packet(u32(2<<16), params("user", "billing")), "0A000"},
		{"protocol 4.0", packet(u32(4<<16), params("user", "billing")), "0A000"},
		{"no user", packet(u32(196608), params("database", f.db)), "28000"},
		{"a parameter twice", packet(u32(196608), params("user", "billing", "user", "ops")), "08P01"},
		{"no terminator", packet(u32(196608), []byte("user\x00billing\x00")), "08P01"},
		{"a cancel request of the wrong length", packet(u32(80877102), u32(1)), "08P01"},
	} {
		r := f.dial()
		r.write(tc.raw)
		if got := r.closedWith(); got != tc.code {
			t.Errorf("%s: closed with SQLSTATE %q, want %s", tc.name, got, tc.code)
		}
	}

	// 3.2, and an option of a later protocol: carried on in 3.0.
	r := f.dial()
	r.write(packet(u32(3<<16|2), params("user", billing, "database", f.db, "_pq_.future", "on")))
	npv, ok := r.receive().(*pgproto3.NegotiateProtocolVersion)
	if !ok || npv.NewestMinorProtocol != 0 || strings.Join(npv.UnrecognizedOptions, ",") != "_pq_.future" {
		t.Fatalf("protocol 3.2: %+v, want NegotiateProtocolVersion to 3.0 naming _pq_.future", npv)
	}
	if _, ok := r.receive().(*pgproto3.AuthenticationCleartextPassword); !ok {
		t.Fatal("protocol 3.2: no password asked for after the negotiation")
	}
	r.send(&pgproto3.PasswordMessage{Password: f.keys[billing]})
	r.until(func(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.ReadyForQuery); return ok })

	// A wrong password, a client without sql_role, another database.
	for _, tc := range []struct {
		name, user, password, db, code string
	}{
		{"a wrong password", billing, "not-the-key", f.db, "28P01"},
		{"another client's key", billing, f.keys[ledger], f.db, "28P01"},
		{"a client without sql_role", ops, f.keys[ops], f.db, "28000"},
		{"another database", billing, f.keys[billing], "postgres", "3D000"},
	} {
		r := f.dial()
		r.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": tc.user, "database": tc.db}})
		if _, ok := r.receive().(*pgproto3.AuthenticationCleartextPassword); !ok {
			t.Fatalf("%s: no password asked for", tc.name)
		}
		r.send(&pgproto3.PasswordMessage{Password: tc.password})
		if got := r.closedWith(); got != tc.code {
			t.Errorf("%s: closed with SQLSTATE %q, want %s", tc.name, got, tc.code)
		}
	}
	var one int
	if err := f.connect(billing).QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("after the bad startups: %v", err)
	}
}

// TestPasswordOnlyOverTLSOrLoopback: from another host over plain TCP
// the front refuses before the client sends its password.
func TestPasswordOnlyOverTLSOrLoopback(t *testing.T) {
	f := newFront(t)
	ip := nonLoopback(t)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = f.srv.Serve(ln) }()
	r := f.dialAt(ln.Addr().String())
	r.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": billing, "database": f.db}})
	m := r.receive()
	e, ok := m.(*pgproto3.ErrorResponse)
	if !ok || e.Code != "28000" || !strings.Contains(e.Message, "only over TLS or from this host") {
		t.Fatalf("a password over plain TCP from %s: %T %+v, want 28000 before any password is asked for", ip, m, m)
	}
}

// nonLoopback is an address of this host's that is not loopback.
func nonLoopback(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Fatal("this host has no address but loopback: the test needs one to connect from another address")
	return ""
}

// TestBadMessages: a message past the size limit, or of a type the
// protocol has not, ends the session with an error, and the transaction
// it had open (fenced and written) is rolled back; a client gone
// mid-transaction likewise. Nothing is written, and the fence row is
// free for the next holder.
func TestBadMessages(t *testing.T) {
	f := newFront(t, func(c *sqlfront.Config) { c.MaxMessageBytes = 64 << 10 })
	const account, resource = "acct-36", "account/acct-36"
	l := f.lease(billing, resource, 60, 0)
	before := f.state(account)
	open := "BEGIN; SET LOCAL fencegw.tokens = '" + resource + "=" + l.Token + "'; " + strings.Replace(debit, "%s", account, 1)
	for _, tc := range []struct {
		name string
		end  func(r *rawClient) string // ends the session, and says how
	}{
		{"an oversized message", func(r *rawClient) string {
			r.send(&pgproto3.Query{String: "SELECT '" + strings.Repeat("x", 70<<10) + "'"})
			return r.closedWith()
		}},
		{"an unknown message type", func(r *rawClient) string {
			r.write([]byte{'Z', 0, 0, 0, 4})
			return r.closedWith()
		}},
		{"the client gone", func(r *rawClient) string {
			r.conn.Close()
			return ""
		}},
	} {
		r := f.login(billing)
		if errs := r.query(open); len(errs) > 0 {
			t.Fatalf("%s: %+v", tc.name, errs)
		}
		code := tc.end(r)
		if want := map[string]string{"an oversized message": "54000", "an unknown message type": "08P01"}[tc.name]; code != want {
			t.Errorf("%s: closed with SQLSTATE %q, want %q", tc.name, code, want)
		}
		if !testenv.WaitFor(time.Minute, func() bool { return f.backends() == 0 }) {
			t.Fatalf("%s: the session's backend outlived it", tc.name)
		}
		if after := f.state(account); after != before {
			t.Fatalf("%s: %s, was %s", tc.name, after, before)
		}
	}
	if err := tryTx(t, f.connect(billing), "SET LOCAL fencegw.tokens = '"+resource+"="+l.Token+"'", strings.Replace(debit, "%s", account, 1)); err != nil {
		t.Fatalf("the holder's write after the sessions ended: %v", err)
	}
}

// backends counts the sessions logged in as the front's role.
func (f *front) backends() int {
	var n int
	_ = f.gw.Pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE usename = $1", f.role).Scan(&n)
	return n
}

// TestCloseEndsSessions: closing the front tells each session's client
// why (57P01) and PostgreSQL rolls back what it had open: nothing
// written.
func TestCloseEndsSessions(t *testing.T) {
	f := newFront(t)
	const account, resource = "acct-37", "account/acct-37"
	l := f.lease(billing, resource, 60, 0)
	before := f.state(account)
	r := f.login(billing)
	if errs := r.query("BEGIN; SET LOCAL fencegw.tokens = '" + resource + "=" + l.Token + "'; " + strings.Replace(debit, "%s", account, 1)); len(errs) > 0 {
		t.Fatalf("%+v", errs)
	}
	go f.srv.Close()
	if code := r.closedWith(); code != "57P01" {
		t.Fatalf("a session when the front closes: closed with %q, want 57P01", code)
	}
	if !testenv.WaitFor(time.Minute, func() bool { return f.backends() == 0 }) {
		t.Fatal("the session's backend outlived the front")
	}
	if after := f.state(account); after != before {
		t.Fatalf("%s, was %s", after, before)
	}
}

package sqlfront_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// rawClient speaks the protocol to the front byte by byte, for what no
// driver would send.
type rawClient struct {
	t     testing.TB
	front *front
	conn  net.Conn
	fe    *pgproto3.Frontend
	// pid and secret are the key the front gave the session, to cancel
	// it with.
	pid    uint32
	secret []byte
}

func (f *front) dial() *rawClient {
	f.t.Helper()
	return f.dialAt(f.addr)
}

func (f *front) dialAt(addr string) *rawClient {
	f.t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { conn.Close() })
	// A bound on every read: the front must answer, not hang.
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	return &rawClient{t: f.t, front: f, conn: conn, fe: pgproto3.NewFrontend(conn, conn)}
}

// login connects as client with its key, up to ReadyForQuery.
func (f *front) login(client string) *rawClient {
	f.t.Helper()
	r := f.dial()
	r.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": client, "database": f.db}})
	if _, ok := r.receive().(*pgproto3.AuthenticationCleartextPassword); !ok {
		f.t.Fatal("no password asked for")
	}
	r.send(&pgproto3.PasswordMessage{Password: f.keys[client]})
	r.until(ready)
	return r
}

func (r *rawClient) send(msgs ...pgproto3.FrontendMessage) {
	r.t.Helper()
	for _, m := range msgs {
		r.fe.Send(m)
	}
	if err := r.fe.Flush(); err != nil {
		r.t.Fatal(err)
	}
}

// write writes b as it is.
func (r *rawClient) write(b []byte) {
	r.t.Helper()
	if _, err := r.conn.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawClient) receive() pgproto3.BackendMessage {
	r.t.Helper()
	m, err := r.fe.Receive()
	if err != nil {
		r.t.Fatalf("receive: %v", err)
	}
	if k, ok := m.(*pgproto3.BackendKeyData); ok {
		r.pid, r.secret = k.ProcessID, append([]byte(nil), k.SecretKey...)
	}
	return m
}

// until reads messages up to one done accepts, and returns the errors
// among them.
func (r *rawClient) until(done func(pgproto3.BackendMessage) bool) []pgproto3.ErrorResponse {
	r.t.Helper()
	var errs []pgproto3.ErrorResponse
	for {
		m := r.receive()
		if e, ok := m.(*pgproto3.ErrorResponse); ok {
			errs = append(errs, *e)
		}
		if done(m) {
			return errs
		}
	}
}

// query runs sql as a simple query and returns its errors.
func (r *rawClient) query(sql string) []pgproto3.ErrorResponse {
	r.t.Helper()
	r.send(&pgproto3.Query{String: sql})
	return r.until(ready)
}

// closedWith reads up to the end of the connection and returns the last
// error it was told, "" for none.
func (r *rawClient) closedWith() string {
	r.t.Helper()
	code := ""
	for {
		m, err := r.fe.Receive()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, net.ErrClosed) {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					r.t.Fatal("the front neither answered nor closed the connection")
				}
			}
			return code
		}
		if e, ok := m.(*pgproto3.ErrorResponse); ok {
			code = e.Code
		}
	}
}

// packet is a startup packet: its length, then body.
func packet(body ...[]byte) []byte {
	var b []byte
	for _, p := range body {
		b = append(b, p...)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b)+4)), b...) // the length counts itself
}

func u32(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

package gateway_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway"
)

// limitedServer serves h's gateway on a listener of its own limited to
// limit connections; each connection that gives its place back is sent on
// the returned channel.
func limitedServer(t *testing.T, h *harness, limit int, tls bool) (addr string, closed <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 16)
	lim := gateway.LimitConnectionsNotifying(h.gw, ln, limit, tls, func() { ch <- struct{}{} })
	srv := &http.Server{Handler: h.gw.Handler(), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(lim) }()
	t.Cleanup(func() { _ = srv.Close(); <-served })
	return ln.Addr().String(), ch
}

// rawConn is one client connection sending requests by hand.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// debit sends the demo's debit of 1 cent from account with token and
// reads the answer.
func (c *rawConn) debit(t *testing.T, account, token string) (*http.Response, []byte) {
	t.Helper()
	body := debit(account, 1)
	fmt.Fprintf(c, "POST /v1/ops/debit HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s",
		gateway.TokenHeader, token, len(body), body)
	return c.read(t)
}

func (c *rawConn) get(t *testing.T, path string) (*http.Response, []byte) {
	t.Helper()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: gw\r\n\r\n", path)
	return c.read(t)
}

func (c *rawConn) read(t *testing.T) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestConnectionLimitRefusesPastItAndServesAgain: with two connections
// open (idle keep-alive), a third is answered 503 with a problem document
// and Connection: close before its write is read, and nothing of that
// write is applied; once one of the two closes, a new connection's write
// is served. /metrics counts the connections open and refused.
func TestConnectionLimitRefusesPastItAndServesAgain(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	addr, closed := limitedServer(t, h, 2, false)
	// An account of its own: etcd, and so the lock, is shared by the
	// package's tests.
	const account = "acct-13"
	l := h.mustAcquire("account/"+account, 30, 0)
	defer h.release(l)

	first, second := dialRaw(t, addr), dialRaw(t, addr)
	for _, c := range []*rawConn{first, second} {
		if resp, b := c.get(t, "/livez"); resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /livez within the limit: %d %s", resp.StatusCode, b)
		}
	}
	before := h.state()
	third := dialRaw(t, addr)
	resp, b := third.debit(t, account, l.Token)
	var p gateway.Problem
	_ = json.Unmarshal(b, &p)
	switch {
	case resp.StatusCode != http.StatusServiceUnavailable:
		t.Fatalf("the connection past the limit: %d %s, want 503", resp.StatusCode, b)
	case resp.Header.Get("Content-Type") != "application/problem+json" || !resp.Close || resp.Header.Get("Retry-After") == "":
		t.Errorf("refusal's headers %v: want application/problem+json, Connection: close, Retry-After", resp.Header)
	case p.Type != "urn:fencegw:problem:unavailable" || p.Outcome != "not-applied" || p.Status != 503:
		t.Errorf("refusal's problem %+v: want unavailable, not-applied", p)
	}
	if n, err := third.r.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("the refused connection stays open: read %d bytes, %v", n, err)
	}
	if after := h.state(); after != before {
		t.Fatalf("a refused connection's write changed the database: %s, was %s", after, before)
	}
	if open, refused, limit := metric(t, h, "fencegw_client_connections_open"), metric(t, h, "fencegw_client_connections_refused_total"), metric(t, h, "fencegw_client_connections_max"); open != 2 || refused != 1 || limit != 2 {
		t.Errorf("metrics: %d open, %d refused, max %d; want 2, 1, 2", open, refused, limit)
	}

	first.Close()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the server never closed its side of the connection the client closed")
	}
	balance := h.balance(account)
	if resp, b := dialRaw(t, addr).debit(t, account, l.Token); resp.StatusCode != http.StatusOK {
		t.Fatalf("a new connection once one closed: %d %s, want 200", resp.StatusCode, b)
	}
	if got := h.balance(account); got != balance-1 {
		t.Errorf("balance %d after the write, want %d", got, balance-1)
	}
	if refused := metric(t, h, "fencegw_client_connections_refused_total"); refused != 1 {
		t.Errorf("%d connections refused, want still 1", refused)
	}
}

// TestConnectionLimitOnTLSClosesBeforeTheHandshake: on a TLS listener a
// connection past the limit is closed without a byte: a plaintext 503
// would be garbage inside a TLS session. The server behind the limit
// speaks plain HTTP here; only the limit's refusal is under test.
func TestConnectionLimitOnTLSClosesBeforeTheHandshake(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	addr, _ := limitedServer(t, h, 1, true)
	held := dialRaw(t, addr)
	if resp, _ := held.get(t, "/livez"); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /livez within the limit: %d", resp.StatusCode)
	}
	refused := dialRaw(t, addr)
	fmt.Fprintf(refused, "\x16\x03\x01\x00\x05hello") // the start of a ClientHello
	b, err := io.ReadAll(refused)
	if len(b) != 0 {
		t.Errorf("the refused TLS connection got %q, want nothing", b)
	}
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("the refused TLS connection stays open: %v", err)
	}
	if n := metric(t, h, "fencegw_client_connections_refused_total"); n != 1 {
		t.Errorf("%d connections refused, want 1", n)
	}
}

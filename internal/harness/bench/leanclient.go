package bench

import (
	"bufio"
	"cmp"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fencegw/fencegw/gateway"
)

// leanClient sends writes over plain HTTP/1.1 keep-alive connections, one
// per load client, on the client's own goroutine. net/http's client runs
// two more goroutines per connection and hands every request and answer
// across them: on two cores shared with the gateway and PostgreSQL, that
// load generator's own work showed in the gateway's numbers. This one costs
// a write, a read and a response parse, as a tool like wrk would.
type leanClient struct {
	addrs  []string // host:port, loopback: new connections go round-robin
	next   atomic.Uint64
	idle   chan *leanConn
	start  []byte   // request line and headers up to the token
	tokens []string // account id-1's token
}

type leanConn struct {
	net.Conn
	r   *bufio.Reader
	req []byte
}

// newLeanClient writes op to the gateway at addr, each account with its
// token (tokens[id-1]); clients is how many connections it keeps.
func newLeanClient(addr, op string, tokens []string, clients int) *leanClient {
	return newLeanClientOver([]string{addr}, op, tokens, clients)
}

// newLeanClientOver is newLeanClient over several gateways (replicas):
// each connection it opens goes to the next of addrs, so its clients'
// writes spread evenly over them.
func newLeanClientOver(addrs []string, op string, tokens []string, clients int) *leanClient {
	start := "POST /v1/ops/" + op + " HTTP/1.1\r\nHost: " + addrs[0] + "\r\nContent-Type: application/json\r\n" +
		gateway.TokenHeader + ": "
	return &leanClient{addrs: addrs, idle: make(chan *leanConn, clients), start: []byte(start), tokens: tokens}
}

// close closes the idle connections; call it once no write is in flight.
func (c *leanClient) close() {
	for {
		select {
		case conn := <-c.idle:
			conn.Close()
		default:
			return
		}
	}
}

// write is a writeFunc.
func (c *leanClient) write(ctx context.Context, id int64) (string, string) {
	var conn *leanConn
	select {
	case conn = <-c.idle:
	default:
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", c.addrs[(c.next.Add(1)-1)%uint64(len(c.addrs))])
		if err != nil {
			return "transport", err.Error()
		}
		conn = &leanConn{Conn: nc, r: bufio.NewReader(nc), req: make([]byte, 0, 256)}
	}
	kind, detail, reusable := conn.roundTrip(c.start, c.tokens[id-1], id)
	if !reusable {
		conn.Close()
		return kind, detail
	}
	select {
	case c.idle <- conn:
	default:
		conn.Close()
	}
	return kind, detail
}

// roundTrip sends one write and reads its answer; reusable is false when
// the connection can serve no other.
func (conn *leanConn) roundTrip(start []byte, token string, id int64) (kind, detail string, reusable bool) {
	body := strconv.AppendInt([]byte(`{"id":`), id, 10)
	body = append(strconv.AppendInt(append(body, `,"amount":`...), Amount, 10), '}')
	req := append(append(append(conn.req[:0], start...), token...), "\r\nContent-Length: "...)
	req = strconv.AppendInt(req, int64(len(body)), 10)
	req = append(append(req, "\r\n\r\n"...), body...)
	conn.req = req
	if err := conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return "transport", err.Error(), false
	}
	if _, err := conn.Write(req); err != nil {
		return "transport", err.Error(), false
	}
	resp, err := http.ReadResponse(conn.r, nil)
	if err != nil {
		return "transport", err.Error(), false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		kind, detail = problemKind(resp) // reads the first 8 KiB of the body
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return cmp.Or(kind, "transport"), cmp.Or(detail, err.Error()), false
	}
	return kind, detail, !resp.Close
}

package gateway

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Bounds on refusing a connection past the limit.
const (
	// refusalLinger is how long a refused connection is kept, half
	// closed, for the client to read its 503 (net/http waits as long
	// before closing after an early answer).
	refusalLinger = 500 * time.Millisecond
	// maxRefusing bounds the refusals answering at once: past it a
	// connection is closed unanswered, so that a flood of connections
	// costs a goroutine and a descriptor each for half a second at most,
	// a bounded number of them.
	maxRefusing = 256
	// maxDrained bounds what is read of a refused connection's requests.
	maxDrained = 64 << 10
	// refusalLogEvery spaces the log lines about refusals; the metric
	// counts every one.
	refusalLogEvery = 10 * time.Second
)

// LimitConnections returns ln accepting at most limit client connections
// open at once, idle keep-alive ones included; limit must be positive.
// Past it, a connection is refused at once, before any request of it is
// read, so nothing it carries is applied: on plain HTTP with a 503
// problem document (unavailable, outcome not-applied) and Connection:
// close; with tls set, the listener's connections are TLS and are closed
// before the handshake, because a plaintext answer is unreadable to a TLS
// client and a handshake only to refuse spends the CPU the limit saves.
// The gateway's /metrics counts connections open and refused.
func (g *Gateway) LimitConnections(ln net.Listener, limit int, tls bool) net.Listener {
	g.metrics.connsMax.Set(float64(limit))
	return &connLimit{
		Listener: ln, places: make(chan struct{}, limit), refusing: make(chan struct{}, maxRefusing), tls: tls,
		answer: refusal(), limit: limit, open: g.metrics.connsOpen, refused: g.metrics.connsRefused, log: g.log,
	}
}

// connLimit is a listener whose connections each hold one of its places
// until closed.
type connLimit struct {
	net.Listener
	places   chan struct{}
	refusing chan struct{}
	tls      bool
	answer   []byte // the whole HTTP response of a refusal
	limit    int
	open     prometheus.Gauge
	refused  prometheus.Counter
	log      *slog.Logger
	lastLog  atomic.Int64 // unix nanoseconds of the last refusal logged
	// closed, if set, is called when a connection gives its place back
	// (tests).
	closed func()
}

// Accept returns the next connection that finds a place, refusing the
// others as they come.
func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.places <- struct{}{}:
			l.open.Inc()
			return &limitedConn{Conn: c, limit: l}, nil
		default:
			l.refuse(c)
		}
	}
}

// refuse counts and answers a connection past the limit, on a goroutine
// of its own: Accept must go on serving the connections that fit.
func (l *connLimit) refuse(c net.Conn) {
	l.refused.Inc()
	if now, last := time.Now().UnixNano(), l.lastLog.Load(); now-last >= int64(refusalLogEvery) && l.lastLog.CompareAndSwap(last, now) {
		l.log.Warn("client connections refused: the API listener is at --max-connections (fencegw_client_connections_refused_total counts them)",
			slog.Int("max_connections", l.limit))
	}
	if l.tls {
		_ = c.Close()
		return
	}
	select {
	case l.refusing <- struct{}{}:
	default:
		_ = c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		answerAndClose(c, l.answer)
	}()
}

// answerAndClose writes answer on c and closes it. Closing a socket with
// unread request bytes makes the kernel reset the connection, and a reset
// may discard the answer before the client reads it: so the write side
// is closed first and the client's bytes read, for refusalLinger at most,
// until it closes its side.
func answerAndClose(c net.Conn, answer []byte) {
	defer c.Close()
	if c.SetDeadline(time.Now().Add(refusalLinger)) != nil {
		return
	}
	if _, err := c.Write(answer); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, maxDrained))
}

// refusal is the answer to a connection past the limit, as problemFor
// words it.
func refusal() []byte {
	p := problemFor(ErrTooManyConnections, problemScope{})
	body := renderProblem(p)
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s",
		p.Status, http.StatusText(p.Status), problemContentType[0], len(body), body)
}

// limitedConn gives its place back when first closed.
type limitedConn struct {
	net.Conn
	limit *connLimit
	once  sync.Once
}

// CloseWrite half-closes a TCP connection, as net/http does before it
// closes one it answered early.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		<-c.limit.places
		c.limit.open.Dec()
		if c.limit.closed != nil {
			c.limit.closed()
		}
	})
	return err
}

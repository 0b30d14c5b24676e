package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Idle connections' bounds.
const (
	// idleDialers open idle connections at once: enough to open 10,000 in
	// seconds, few enough not to overflow a listen backlog.
	idleDialers = 32
	// fdMargin is what a run needs of file descriptors besides its
	// connections: pools, etcd, pgbench's pipes, the files it reads.
	fdMargin = 512
)

// idleConns are keep-alive connections to the gateway, each having had
// one request answered, then left idle: what a fleet of quiet clients
// costs the gateway.
type idleConns struct {
	conns []net.Conn
}

// openIdle opens n idle connections to addrs, round-robin. On error
// those already open are closed.
func openIdle(ctx context.Context, addrs []string, n int) (_ *idleConns, err error) {
	ic := &idleConns{conns: make([]net.Conn, n)}
	defer func() {
		if err != nil {
			ic.close()
		}
	}()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range min(idleDialers, n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				c, err := openOne(ctx, addrs[i%len(addrs)])
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("bench: idle connection %d of %d: %w", i+1, n, err))
					mu.Unlock()
					cancel()
					return
				}
				ic.conns[i] = c
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bench: opening idle connections: %w", err)
	}
	return ic, nil
}

// openOne dials addr and has GET /livez answered on the connection,
// which the gateway then holds as an idle keep-alive connection.
func openOne(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if err := c.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := fmt.Fprintf(c, "GET /livez HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
		c.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 512), nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	resp.Body.Close() // /livez's few bytes came with the headers
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable && resp.Close:
		c.Close()
		return nil, errors.New("the gateway refused the connection: at its --max-connections")
	case resp.StatusCode != http.StatusOK || resp.Close:
		c.Close()
		return nil, fmt.Errorf("GET /livez: %s, Connection: close %v; want 200 on a connection kept alive", resp.Status, resp.Close)
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// close closes every connection.
func (ic *idleConns) close() {
	for _, c := range ic.conns {
		if c != nil {
			c.Close()
		}
	}
}

// checkFileLimit raises the soft limit of open files to the hard one
// and makes sure it holds conns connections of this process besides the
// rest of the run.
func checkFileLimit(conns int) error {
	limit := raiseFileLimit()
	if need := uint64(conns + fdMargin); limit > 0 && need > limit {
		return fmt.Errorf("%w: %d connections need about %d open files in this process; its limit is %d (ulimit -Hn; an in-process gateway holds both ends, --replicas 1 one)",
			ErrConfig, conns, need, limit)
	}
	return nil
}

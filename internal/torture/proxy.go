package torture

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// slowProxy sits between the gateways and PostgreSQL. When the nemesis
// slows the network, every chunk, both ways, is held for the delay before
// it is passed on: a write can then reach PostgreSQL, or its answer the
// gateway, long after it was sent — after the writer's lease expired and a
// successor wrote. Each direction of a connection keeps its order, as TCP
// does.
type slowProxy struct {
	ln     net.Listener
	target atomic.Pointer[string] // host:port new connections go to
	delay  atomic.Int64           // nanoseconds; 0: pass at once
	// gate, while set, holds every chunk until it is closed (release, drop).
	gate atomic.Pointer[chan struct{}]

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startProxy(target string) (*slowProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &slowProxy{ln: ln, conns: map[net.Conn]struct{}{}}
	p.target.Store(&target)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// proxiedURL is dbURL with its host and port replaced by the proxy's.
func (p *slowProxy) proxiedURL(dbURL string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", err
	}
	u.Host = p.ln.Addr().String()
	return u.String(), nil
}

func (p *slowProxy) setDelay(d time.Duration) { p.delay.Store(int64(d)) }

// port is the proxy's own port on 127.0.0.1.
func (p *slowProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// retarget sends new connections to addr; open ones keep theirs.
func (p *slowProxy) retarget(addr string) { p.target.Store(&addr) }

// hold stops passing anything on, both ways, until release or drop.
func (p *slowProxy) hold() {
	g := make(chan struct{})
	p.gate.Store(&g)
}

// release passes on what hold held, and what comes after.
func (p *slowProxy) release() {
	if g := p.gate.Swap(nil); g != nil {
		close(*g)
	}
}

// drop cuts every open connection, and with them whatever the proxy still
// held back: a server that died takes its unsent bytes with it.
func (p *slowProxy) drop() {
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.release() // the held pipes find their connections closed
}

func (p *slowProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(client)
		}()
	}
}

func (p *slowProxy) serve(client net.Conn) {
	server, err := net.DialTimeout("tcp", *p.target.Load(), 5*time.Second)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(client, server) {
		return // closing
	}
	done := make(chan struct{}, 2)
	go func() { p.pipe(server, client); done <- struct{}{} }()
	go func() { p.pipe(client, server); done <- struct{}{} }()
	<-done // one side ended: end both, as a TCP reset would
	client.Close()
	server.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

func (p *slowProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := time.Duration(p.delay.Load()); d > 0 {
				time.Sleep(d)
			}
			if g := p.gate.Load(); g != nil {
				<-*g
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// track records a connection pair for close; false (both closed) once the
// proxy is closing.
func (p *slowProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// close stops accepting, breaks every connection and waits for the pipes.
func (p *slowProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

package torture

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// slowProxy sits between a gateway and PostgreSQL or an etcd member.
// When the nemesis slows the network, every chunk, both ways, is held for
// the delay before it is passed on: a write can then reach PostgreSQL, or
// its answer the gateway, long after it was sent — after the writer's
// lease expired and a successor wrote. When it partitions the network,
// nothing passes one way or both until the partition heals (what was
// held then arrives, as TCP's retransmissions deliver it) or the
// connections are cut (as when TCP gives up). Each direction of a
// connection keeps its order, as TCP does.
type slowProxy struct {
	ln     net.Listener
	target atomic.Pointer[string] // host:port new connections go to
	delay  atomic.Int64           // nanoseconds; 0: pass at once
	// gates, per direction (toServer, toClient), while set, hold every
	// chunk until they are closed (release, drop).
	gates [2]atomic.Pointer[chan struct{}]

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

// The directions a proxy passes bytes in.
const (
	toServer = iota // the gateway's requests
	toClient        // the server's answers
)

// hold stops passing anything on, both ways, until release or drop.
func (p *slowProxy) hold() { p.holdDirections(toServer, toClient) }

// holdDirections stops passing anything on in the directions given, until
// release or drop: a partition, one way or both.
func (p *slowProxy) holdDirections(dirs ...int) {
	for _, d := range dirs {
		g := make(chan struct{})
		if old := p.gates[d].Swap(&g); old != nil {
			close(*old)
		}
	}
}

// release passes on what hold held, and what comes after.
func (p *slowProxy) release() {
	for d := range p.gates {
		if g := p.gates[d].Swap(nil); g != nil {
			close(*g)
		}
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
	go func() { p.pipe(server, client, toServer); done <- struct{}{} }()
	go func() { p.pipe(client, server, toClient); done <- struct{}{} }()
	<-done // one side ended: end both, as a TCP reset would
	client.Close()
	server.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

func (p *slowProxy) pipe(dst, src net.Conn, dir int) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := time.Duration(p.delay.Load()); d > 0 {
				time.Sleep(d)
			}
			// A gate closed while this chunk waited may have been
			// replaced by a new one: wait for the direction to be open.
			for g := p.gates[dir].Load(); g != nil; g = p.gates[dir].Load() {
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

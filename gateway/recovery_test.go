package gateway_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// cutProxy forwards TCP connections to target until cut, which closes
// them all and turns every new one away (counting the attempts) until
// restore.
type cutProxy struct {
	addr string

	mu       sync.Mutex
	cut      bool
	attempts int // connections turned away while cut
	open     []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &cutProxy{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.cut {
				p.attempts++
				p.mu.Unlock()
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.open = append(p.open, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.open {
			c.Close()
		}
		p.open = nil
	}
}

func (p *cutProxy) turnedAway() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.attempts
}

// TestReadyPromptlyAfterEtcdReturns is issue 7's slow recovery: after an
// outage long enough for gRPC's default reconnect backoff to grow past
// half a minute (eight failed attempts), a gateway dialled with
// authority.Dial is ready again within seconds of etcd answering, not
// after its next backoff. The bound is a failure line, well above what it
// takes (the backoff is capped at 2 s).
func TestReadyPromptlyAfterEtcdReturns(t *testing.T) {
	etcd, _ := testenv.PrivateEtcd(t)
	proxy := newCutProxy(t, strings.TrimPrefix(etcd.Endpoints()[0], "http://"))
	cli, err := authority.Dial([]string{proxy.addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	h := newHarness(t, demoPolicy(t, "monotonic"))
	_, base := gatewayWith(t, h.pool.Config().ConnConfig.ConnString(), cli)
	gw := &harness{t: t, base: base}
	ready := func() bool { return gw.do(http.MethodGet, "/readyz", nil, "").Status == http.StatusOK }
	if !testenv.WaitFor(20*time.Second, ready) {
		t.Fatalf("the gateway never became ready: %s", gw.do(http.MethodGet, "/readyz", nil, "").Body)
	}

	proxy.setCut(true)
	if !testenv.WaitFor(60*time.Second, func() bool { return !ready() && proxy.turnedAway() >= 8 }) {
		t.Fatalf("etcd cut off: %d reconnection attempts seen, want 8", proxy.turnedAway())
	}
	proxy.setCut(false)
	const bound = 15 * time.Second
	start := time.Now()
	if !testenv.WaitFor(bound, ready) {
		t.Fatalf("not ready %v after etcd came back: reconnection backs off too long", bound)
	}
	t.Logf("ready %v after etcd came back", time.Since(start).Round(time.Millisecond))
}

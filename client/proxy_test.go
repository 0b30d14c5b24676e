package client_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// faultProxy stands between a client and the real gateway, counts the
// requests by kind, and can answer in the gateway's place.
type faultProxy struct {
	URL string

	mu     sync.Mutex
	fault  string // "": forward; "503": a load balancer's 503 page; "502": a proxy's; "drop": close the connection; "503-once": one 503 page, then forward
	counts map[string]int
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{counts: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.counts[requestKind(r)]++
		fault := p.fault
		p.mu.Unlock()
		switch fault {
		case "":
			rp.ServeHTTP(w, r)
		case "502", "503", "503-once":
			if fault == "503-once" {
				p.setFault("")
			}
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(map[string]int{"502": 502, "503": 503, "503-once": 503}[fault])
			_, _ = w.Write([]byte("<html><body><h1>" + fault + " Service Temporarily Unavailable</h1>\n<hr><center>nginx</center></body></html>\n"))
		case "drop":
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		case "lose-answer":
			// The gateway gets the request and acts on it; its answer is
			// lost on the way back, once.
			rp.ServeHTTP(httptest.NewRecorder(), r)
			p.setFault("")
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// requestKind names a request of the gateway's API.
func requestKind(r *http.Request) string {
	switch p := r.URL.Path; {
	case r.Method == "POST" && p == "/v1/leases":
		return "acquire"
	case r.Method == "POST" && strings.HasSuffix(p, "/keepalive"):
		return "keepalive"
	case r.Method == "DELETE" && strings.HasPrefix(p, "/v1/leases/"):
		return "release"
	case r.Method == "POST" && strings.HasPrefix(p, "/v1/ops/"):
		return "write"
	}
	return "other"
}

func (p *faultProxy) setFault(f string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
}

func (p *faultProxy) count(kind string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[kind]
}

// keepaliveGoroutines counts the goroutines running a lease's keepalive.
func keepaliveGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "client.(*Lease).keepAlive(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// checkNoKeepalive fails the test unless every lease's goroutine has
// returned (the tests of this package do not run in parallel).
func checkNoKeepalive(t *testing.T) {
	t.Helper()
	if !testenv.WaitFor(5*time.Second, func() bool { return keepaliveGoroutines() == 0 }) {
		t.Errorf("%d keepalive goroutines still running after every lease ended", keepaliveGoroutines())
	}
}

// waitDone waits for the lease to end, for at most 10 s of real time.
func waitDone(t *testing.T, l *client.Lease) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("lease %s did not end", l.ID())
	}
}

// debit is the arguments of the demo's debit and credit operations.
func debit(account string, cents int) map[string]any {
	return map[string]any{"account": account, "amount_cents": cents}
}

package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// proxy stands between a runner and the real gateway, the way a load
// balancer would: it logs every request, and answers some in the
// gateway's place as the scenario asks (the faults the clients must
// survive, Consul's lock tests' way: a reverse proxy).
type proxy struct {
	URL    string
	target *url.URL
	rp     *httputil.ReverseProxy

	mu      sync.Mutex
	queued  map[string][]action // by request kind, taken one per request
	always  map[string]action   // by request kind, once the queue is empty
	log     []request
	hold    chan struct{} // non-nil: new watches wait until it is closed
	streams map[chan struct{}]bool
}

// request is one request the proxy saw.
type request struct {
	Kind           string // acquire, keepalive, release, write, batch, read, check, watch, observe, admin, other
	IdempotencyKey string
	LastEventID    string
	NotAfter       string
	Resource       string // an acquisition's
}

// action is what the proxy does in the gateway's place.
type action struct {
	do          string // "serve", "lose-answer" (forward, then cut the connection), "delay" (forward, answer late)
	status      int
	contentType string
	body        string
	delay       time.Duration
}

func serve(status int, contentType, body string) action {
	return action{do: "serve", status: status, contentType: contentType, body: body}
}

var (
	loseAnswer = action{do: "lose-answer"}
	page502    = serve(502, "text/html", "<html><body><h1>502 Bad Gateway</h1><hr><center>nginx</center></body></html>\n")
	page503    = serve(503, "text/html", "<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>\n")
)

func delayAnswer(d time.Duration) action { return action{do: "delay", delay: d} }

func newProxy(t testing.TB, target string) *proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{target: u, rp: httputil.NewSingleHostReverseProxy(u), streams: map[chan struct{}]bool{}}
	p.rp.ErrorLog = log.New(io.Discard, "", 0) // a cut connection is the point, not news
	p.reset()
	srv := httptest.NewServer(p)
	t.Cleanup(func() {
		p.setHold(false)
		p.cutWatches()
		srv.Close()
	})
	p.URL = srv.URL
	return p
}

// reset forgets the faults and the log, for the next scenario.
func (p *proxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queued, p.always, p.log = map[string][]action{}, map[string]action{}, nil
}

// push queues actions for the next requests of kind, one each.
func (p *proxy) push(kind string, actions ...action) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queued[kind] = append(p.queued[kind], actions...)
}

// setAlways makes the proxy answer every request of kind with a, once
// the queue is empty.
func (p *proxy) setAlways(kind string, a action) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.always[kind] = a
}

// requests returns the requests of kind the proxy saw, in order.
func (p *proxy) requests(kind string) []request {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []request
	for _, r := range p.log {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

func (p *proxy) count(kind string) int { return len(p.requests(kind)) }

// setHold makes new watch requests wait (true) until it is lifted (false).
func (p *proxy) setHold(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case on && p.hold == nil:
		p.hold = make(chan struct{})
	case !on && p.hold != nil:
		close(p.hold)
		p.hold = nil
	}
}

// activeWatches counts the watch streams under way.
func (p *proxy) activeWatches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.streams)
}

// cutWatches cuts every watch stream under way: the runner's connection
// is closed mid-stream, as a proxy's timeout or a replica's crash does.
func (p *proxy) cutWatches() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for cut := range p.streams {
		close(cut)
		delete(p.streams, cut)
	}
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := request{Kind: requestKind(r), IdempotencyKey: r.Header.Get("Idempotency-Key"),
		LastEventID: r.Header.Get("Last-Event-ID"), NotAfter: r.Header.Get("Fencing-Not-After")}
	if rec.Kind == "acquire" {
		var req struct{ Resource string }
		_ = json.Unmarshal(body, &req)
		rec.Resource = req.Resource
	}
	p.mu.Lock()
	p.log = append(p.log, rec)
	a, ok := p.next(rec.Kind)
	hold := p.hold
	p.mu.Unlock()
	if rec.Kind == "watch" {
		p.serveWatch(w, r, hold)
		return
	}
	if !ok {
		p.rp.ServeHTTP(w, r)
		return
	}
	switch a.do {
	case "serve":
		w.Header().Set("Content-Type", a.contentType)
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	case "lose-answer":
		p.rp.ServeHTTP(httptest.NewRecorder(), r)
		panic(http.ErrAbortHandler) // the connection closes without an answer
	case "delay":
		rec := httptest.NewRecorder()
		p.rp.ServeHTTP(rec, r)
		select {
		case <-time.After(a.delay):
		case <-r.Context().Done():
			return
		}
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}
}

// next takes the action for a request of kind, if any; p.mu held.
func (p *proxy) next(kind string) (action, bool) {
	if q := p.queued[kind]; len(q) > 0 {
		p.queued[kind] = q[1:]
		return q[0], true
	}
	a, ok := p.always[kind]
	return a, ok
}

// serveWatch forwards a watch's stream as it comes, until the stream ends
// or cutWatches cuts it; a held watch first waits for the hold to lift.
func (p *proxy) serveWatch(w http.ResponseWriter, r *http.Request, hold chan struct{}) {
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	cut := make(chan struct{})
	p.mu.Lock()
	p.streams[cut] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.streams, cut)
		p.mu.Unlock()
	}()
	out := r.Clone(ctx)
	out.RequestURI, out.Host = "", p.target.Host
	out.URL.Scheme, out.URL.Host = p.target.Scheme, p.target.Host
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	maps.Copy(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	go func() {
		select {
		case <-cut:
			cancel()
		case <-ctx.Done():
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			_, _ = w.Write(buf[:n])
			_ = rc.Flush()
		}
		if err != nil {
			break
		}
	}
	select {
	case <-cut:
		panic(http.ErrAbortHandler) // mid-stream: no end of the chunked body
	default:
	}
}

// requestKind names a request of the gateway's API.
func requestKind(r *http.Request) string {
	p := r.URL.Path
	switch {
	case r.Method == "POST" && p == "/v1/leases":
		return "acquire"
	case r.Method == "GET" && p == "/v1/leases/watch":
		return "watch"
	case r.Method == "GET" && p == "/v1/leases":
		return "observe"
	case r.Method == "POST" && strings.HasSuffix(p, "/keepalive"):
		return "keepalive"
	case r.Method == "DELETE" && strings.HasPrefix(p, "/v1/leases/"):
		return "release"
	case r.Method == "POST" && strings.HasPrefix(p, "/v1/ops/"):
		return "write"
	case r.Method == "POST" && p == "/v1/batch":
		return "batch"
	case r.Method == "POST" && strings.HasPrefix(p, "/v1/reads/"):
		return "read"
	case r.Method == "POST" && p == "/v1/fences/check":
		return "check"
	case strings.HasPrefix(p, "/v1/admin/"):
		return "admin"
	}
	return "other"
}

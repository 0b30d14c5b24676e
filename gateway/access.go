package gateway

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/fencegw/fencegw/tokens"
)

// RequestIDHeader carries the request's id on every answer; problem
// documents carry it as their instance, and the access log line names it,
// so a client's report finds the gateway's log line.
const RequestIDHeader = "X-Request-Id"

// requestIDs makes the process's request ids: a random prefix, so that
// replicas' ids differ, and a counter.
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return &requestIDs{prefix: hex.EncodeToString(b[:]) + "-"}
}

func (ids *requestIDs) next() string {
	return ids.prefix + strconv.FormatUint(ids.n.Add(1), 10)
}

// accessEntry is what the handlers learn about a request that its access
// log line reports.
type accessEntry struct {
	id        string
	client    string // the policy's name of the caller, or anonymous
	remote    string // the client's address (remoteAddr)
	route     string // the route's pattern, named by the handler (routeNamed)
	status    int
	operation string
	resource  string
	token     string // the presented token, unsigned, as a refusal names it
	// presented is an answered request's presented token, formatted only
	// if its log line is written (--log-level warn writes none).
	presented tokens.Token
	outcome   string // ok, replayed, or the problem type
	err       error  // the cause of a refusal, for the log only
	level     slog.Level
	// contentLength is the storage of an answer's Content-Length header
	// value, in the request's one allocation (accessState).
	contentLength [1]string
}

type accessKey struct{}

// accessOf is the request's access entry; a request that did not come
// through logAccess gets a scratch one.
func accessOf(ctx context.Context) *accessEntry {
	if e, ok := ctx.Value(accessKey{}).(*accessEntry); ok {
		return e
	}
	return &accessEntry{}
}

// statusRecorder remembers the status a handler answered.
type statusRecorder struct {
	http.ResponseWriter
	entry *accessEntry
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.entry.status == 0 {
		s.entry.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.entry.status == 0 {
		s.entry.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (read
// deadlines for bodies, flushes).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// logAccess gives every request an id and writes one log line per
// request once it is answered: who (the client, or anonymous, and its
// address), method, route, status, duration, and what
// the handler learnt (operation, resource, presented token, outcome, the
// cause of a refusal). Refusals log at the level their problem deserves;
// the rest at info, so --log-level warn turns the access log off. routes
// is the router next leads to: the route context made here must name it,
// as the router's own would, for middleware that asks it (GetHead).
func (g *Gateway) logAccess(routes chi.Routes, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		a := &accessState{entry: accessEntry{id: g.requestIDs.next(), client: anonymous, remote: g.remoteAddr(r), level: slog.LevelInfo}}
		e := &a.entry
		a.header[0] = e.id
		w.Header()[RequestIDHeader] = a.header[:]
		a.recorder = statusRecorder{ResponseWriter: w, entry: e}
		// The router fills a route context it finds instead of making
		// its own (a context value and a request copy fewer). Pooled, as
		// chi pools its own: its slices keep their room for the next
		// request's route parameters and patterns.
		rc := routeContexts.Get().(*chi.Context)
		rc.Reset()
		rc.Routes = routes
		defer routeContexts.Put(rc)
		a.ctx = accessContext{Context: r.Context(), entry: e, route: rc}
		ctx := context.Context(&a.ctx)
		r = r.WithContext(ctx)
		next.ServeHTTP(&a.recorder, r)
		if !g.log.Enabled(ctx, e.level) {
			return
		}
		route := e.route
		if route == "" {
			// Refused before its handler ran (authentication, the lease
			// calls' limit, 404, 405): chi's pattern of what it matched.
			route = cmp.Or(rc.RoutePattern(), "(no route)")
		}
		// Room for every attribute on the stack: the line needs no
		// allocation of its own beyond the duration's text.
		var room [12]slog.Attr
		attrs := append(room[:0],
			slog.String("request_id", e.id), slog.String("client", e.client), slog.String("remote_addr", e.remote),
			slog.String("method", r.Method), slog.String("route", route),
			slog.Int("status", cmp.Or(e.status, http.StatusOK)), slog.String("duration", time.Since(start).String()),
		)
		token := e.token
		if token == "" && !e.presented.IsZero() {
			token = e.presented.Unsigned().String()
		}
		for _, kv := range [...]struct{ k, v string }{{"operation", e.operation}, {"resource", e.resource}, {"presented_token", token}, {"outcome", e.outcome}} {
			if kv.v != "" {
				attrs = append(attrs, slog.String(kv.k, kv.v))
			}
		}
		if e.err != nil {
			attrs = append(attrs, slog.String("error", e.err.Error()))
		}
		g.log.LogAttrs(r.Context(), e.level, "request", attrs...)
	})
}

// accessState is what logAccess keeps for one request, in one
// allocation: it runs on every request.
type accessState struct {
	entry    accessEntry
	recorder statusRecorder
	header   [1]string // the request id header's value
	ctx      accessContext
}

// accessContext is a request's context with its access entry and its
// route context as values: part of the request's one allocation, where
// two context.WithValue would make two more. Every other key, and
// cancellation, are its parent's: the context package still finds the
// parent's cancellation beneath it, so contexts derived from it need no
// goroutine of their own.
type accessContext struct {
	context.Context
	entry *accessEntry
	route *chi.Context
}

func (c *accessContext) Value(key any) any {
	switch key {
	case accessKey{}:
		return c.entry
	case chi.RouteCtxKey:
		return c.route
	}
	return c.Context.Value(key)
}

// routeNamed serves h under pattern, naming pattern in the request's
// access log line. Named once here, where the pattern is a constant, the
// route costs nothing per request; chi's RoutePattern would join and
// rewrite its parts anew each time.
func routeNamed(pattern string, h http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		accessOf(r.Context()).route = pattern
		h.ServeHTTP(w, r)
	}
}

var routeContexts = sync.Pool{New: func() any { return chi.NewRouteContext() }}

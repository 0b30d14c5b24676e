package gateway

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// Defaults for Config's zero values.
const (
	DefaultMaxBodyBytes = 64 << 10
	DefaultWriteTimeout = 10 * time.Second
)

// Config is what a Gateway needs; Pool, Authority and Policy are required.
type Config struct {
	Pool      *pgxpool.Pool
	Authority *tokens.Etcd
	Policy    *policy.Policy
	Logger    *slog.Logger

	// MaxBodyBytes bounds a request body; larger ones get 413.
	MaxBodyBytes int64
	// WriteTimeout bounds one write's PostgreSQL work. A write does not
	// stop when its client disconnects: half-finished is worse than late.
	WriteTimeout time.Duration
	// MaxInFlight bounds the writes being read, waiting for a connection
	// or in PostgreSQL at once; more wait at the gate, at most
	// WriteTimeout each, holding little memory. Default: eight per pooled
	// connection, at least DefaultMaxInFlight.
	MaxInFlight int
	// SchemaVersion is the gateway schema version /readyz requires.
	SchemaVersion uint
	// IdempotencyRetention is how long a completed Idempotency-Key is
	// replayed; after that the key may be reused.
	IdempotencyRetention time.Duration
	// UnsafeNoFence turns the fence check off. Only `fencegw torture`'s
	// control runs set it, to prove their checker can fail.
	UnsafeNoFence bool
}

// Gateway serves the HTTP API. It holds no lease or fence state of its own:
// any number of replicas can serve the same clients.
type Gateway struct {
	cfg     Config
	log     *slog.Logger
	exec    *Executor
	coal    *coalescer // for resources with coalesce: true
	admit   *admission
	metrics *metrics
	ready   atomic.Bool
	// authorityMu serialises CheckAuthority; lastRecheck is when a token
	// of an unknown newer epoch last triggered one (unix ns).
	authorityMu sync.Mutex
	lastRecheck atomic.Int64
	maxBody     int64
	writeTTL    time.Duration
	bodyTTL     time.Duration // for an admitted write's body to arrive
	retention   time.Duration
}

// New checks cfg and returns a Gateway that reports not ready until
// SetReady(true).
func New(cfg Config) (*Gateway, error) {
	if cfg.Pool == nil || cfg.Authority == nil || cfg.Policy == nil {
		return nil, errors.New("gateway: Config needs Pool, Authority and Policy")
	}
	g := &Gateway{
		cfg:       cfg,
		log:       cmp.Or(cfg.Logger, slog.Default()),
		exec:      &Executor{pool: cfg.Pool, unsafeNoFence: cfg.UnsafeNoFence},
		maxBody:   cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes),
		writeTTL:  cmp.Or(cfg.WriteTimeout, DefaultWriteTimeout),
		bodyTTL:   defaultBodyTimeout,
		retention: cmp.Or(cfg.IdempotencyRetention, DefaultIdempotencyRetention),
	}
	g.metrics = newMetrics(
		func() float64 { return float64(cfg.Authority.NewestRevision()) },
		func() float64 { return float64(cfg.Authority.Epoch()) },
	)
	g.metrics.forOperations(cfg.Policy.OperationNames())
	limit := cfg.MaxInFlight
	if limit <= 0 {
		limit = defaultMaxInFlight(cfg.Pool.Config().MaxConns)
	}
	g.admit = newAdmission(limit, g.writeTTL, g.metrics.waiting)
	g.metrics.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fencegw_writes_in_flight",
		Help: "Writes past the admission gate (see MaxInFlight).",
	}, func() float64 { return float64(len(g.admit.slots)) }))
	g.coal = newCoalescer(g.exec, g.writeTTL, func(n int) { g.metrics.batchSize.Observe(float64(n)) })
	return g, nil
}

// SetReady flips /readyz: true once set up, false before shutting down so
// load balancers drain the replica first.
func (g *Gateway) SetReady(ready bool) { g.ready.Store(ready) }

// Handler returns the HTTP API.
func (g *Gateway) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	r.Get("/livez", g.handleLive)
	r.Get("/readyz", g.handleReady)
	r.Handle("/metrics", promhttp.HandlerFor(g.metrics.registry, promhttp.HandlerOpts{}))
	r.Route("/v1", func(r chi.Router) {
		r.Use(g.authenticate)
		r.Post("/ops/{operation}", g.handleWrite)
		r.Post("/leases", g.handleAcquire)
		r.Get("/leases", g.handleObserve)
		r.Post("/leases/{id}/keepalive", g.handleKeepAlive)
		r.Delete("/leases/{id}", g.handleRelease)
	})
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		g.writeProblem(w, r, fmt.Errorf("%w: %s %s", ErrNoRoute, r.Method, r.URL.Path), problemScope{})
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		g.writeProblem(w, r, fmt.Errorf("%w: %s on %s", ErrMethod, r.Method, r.URL.Path), problemScope{})
	})
	return g.gateWrites(r)
}

// gateWrites makes each write wait for a turn at the admission gate before
// anything else runs: on the shallowest stack, so the collector can shrink
// the stacks of the goroutines waiting there, and with its body unread (see
// admission). Once admitted, the body must arrive within bodyTTL: a client
// that trickles it would otherwise hold a turn until the server's read
// timeout.
func (g *Gateway) gateWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/ops/") {
			next.ServeHTTP(w, r)
			return
		}
		if err := g.admit.enter(r.Context()); err != nil {
			g.writeProblem(w, r, err, problemScope{Operation: strings.TrimPrefix(r.URL.Path, "/v1/ops/")})
			return
		}
		defer g.admit.leave()
		// Not supported only under a test's ResponseRecorder.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(g.bodyTTL))
		next.ServeHTTP(w, r)
	})
}

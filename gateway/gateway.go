package gateway

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/admission"
	"github.com/fencegw/fencegw/internal/buildinfo"
	"github.com/fencegw/fencegw/internal/timeout"
	"log/slog"
	"net/http"
	"net/netip"
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
)

// Defaults for Config's zero values.
const (
	DefaultMaxBodyBytes = 64 << 10
	DefaultWriteTimeout = 10 * time.Second
)

// Config is what a Gateway needs; Pool, Authority, Policy and Node are
// required.
type Config struct {
	Pool      *pgxpool.Pool
	Authority *authority.Etcd
	Policy    *policy.Policy
	Logger    *slog.Logger
	// Node is this replica's work besides answering requests (package
	// node), made with the same Pool, Authority and Policy: the handlers
	// feed its queues and read what its loops keep.
	Node Node

	// MaxBodyBytes bounds a request body; larger ones get 413.
	MaxBodyBytes int64
	// WriteTimeout bounds one write's PostgreSQL work. A write does not
	// stop when its client disconnects: half-finished is worse than late.
	// The writes that start together share one deadline (package
	// timeout), so a write may run up to a hundredth longer.
	WriteTimeout time.Duration
	// MaxInFlight bounds the writes being read, waiting for a connection
	// or in PostgreSQL at once; more wait at the admission gate, holding
	// little memory. Default: eight per pooled connection, at least 64.
	MaxInFlight int
	// QueueTimeout bounds a write's wait at the gate; then it is refused,
	// unread (503, not-applied). Default: WriteTimeout. A write's worst
	// case is QueueTimeout + BodyTimeout + WriteTimeout.
	QueueTimeout time.Duration
	// BodyTimeout bounds how long an admitted write's body may take to
	// arrive (then 400); a client that trickles it would otherwise hold a
	// turn. Default: 5 s.
	BodyTimeout time.Duration
	// SchemaVersion is the gateway schema version /readyz requires.
	SchemaVersion uint
	// IdempotencyRetention is how long a completed Idempotency-Key is
	// replayed; after that the key may be reused.
	IdempotencyRetention time.Duration
	// MaxLeasesPerClient bounds the leases one client holds or waits for
	// at once (counted in etcd, shared by replicas); without clients in the
	// policy, all callers are one client. Default: 10,000.
	MaxLeasesPerClient int64
	// MaxLeaseRequests bounds the acquisitions and observations this
	// replica serves at once (a waiting acquisition holds its place while
	// it waits), and each client's share of them; past it, 503. Renewals
	// and releases are not counted. Default: 4,096, a quarter of it per
	// client when the policy declares clients.
	MaxLeaseRequests int
	// MaxWatches bounds the watch streams this replica serves at once,
	// and each client's share of them, as MaxLeaseRequests bounds lease
	// calls; past it, 503. Default: 1,024, a quarter of it per client when
	// the policy declares clients.
	MaxWatches int
	// WatchHeartbeat is how often an idle watch stream gets a comment, so
	// that proxies do not close it. Default: 15 s.
	WatchHeartbeat time.Duration
	// NoGroupCommit turns group commit off: by default the writes of
	// coalescing resources that wait for a connection are committed
	// together, across resources (fence.Config.GroupCommit). A resource's
	// policy may say otherwise.
	NoGroupCommit bool
	// MaxWriteTransactions bounds the transactions of coalescing
	// resources in flight at once (fence.Config.MaxTransactions); 0: the
	// default.
	MaxWriteTransactions int
	// TrustedProxies are the proxies whose X-Forwarded-For or Forwarded
	// headers name a request's client address in the access log and the
	// audit; any other peer is named by its own address (remoteaddr.go).
	TrustedProxies []netip.Prefix
	// UnsafeNoFence turns the fence check off. Only `fencegw torture`'s
	// control runs set it, to prove their checker can fail.
	UnsafeNoFence bool
	// UnsafeIgnoreCommitWarnings answers 200 for a COMMIT PostgreSQL
	// warned about (a cancelled wait for synchronous replication). Only
	// `fencegw torture`'s control runs set it (fence.Config).
	UnsafeIgnoreCommitWarnings bool
	// ClientCAs, if set, returns the CAs in force that client
	// certificates must chain to: every request that comes with one, on
	// any route, is refused (401) unless it is valid, for client
	// authentication and issued by one of them (tlsfiles.VerifyClient).
	// A policy's client may then be known by its certificate.
	ClientCAs func() *x509.CertPool
	// RequireClientCert refuses, with ClientCAs, every request that comes
	// without a client certificate.
	RequireClientCert bool
	// VerifyJWT, if set, checks a bearer credential shaped as a JWT
	// that is no client's bearer token, and returns the value of its
	// claim that names the client, for the policy's jwt clients
	// (jwtauth.Verifier.Verify). Its errors must quote no credential.
	VerifyJWT func(token string) (subject string, err error)
	// OpsListener says the process serves OpsHandler on a listener of its
	// own (serve's --ops-listen): /metrics is then served there only, not
	// on the API's listener, where anyone who reaches the API would read
	// it without credentials.
	OpsListener bool
	// Collectors are served on /metrics beside the gateway's own: what
	// its host measures around it (reloads of TLS and JWKS files).
	Collectors []prometheus.Collector
}

// Lease limits' defaults.
const (
	DefaultMaxLeasesPerClient = 10_000
	DefaultMaxLeaseRequests   = 4096
)

// Gateway serves the HTTP API. It holds no lease or fence state of its own:
// any number of replicas can serve the same clients.
type Gateway struct {
	cfg        Config
	log        *slog.Logger
	store      *fence.Store
	readiness  readiness
	status     statusBoard // GET /status and /v1/status
	leaseCalls *callLimit
	watchCalls *callLimit // watch.go
	admit      *admission.Gate
	metrics    *metrics
	requestIDs *requestIDs
	openapi    func() ([]byte, error) // GET /v1/openapi.json
	// stopWaits ends lease waits in progress, and refuses new ones, when
	// the gateway shuts down (StopLeaseWaits).
	stopWaits     context.Context
	stopWaitsFunc context.CancelFunc
	ready         atomic.Bool
	maxBody       int64
	writeTTL      time.Duration
	// writeDeadlines: the writes that start together share one deadline,
	// writeTTL away (or up to a hundredth more).
	writeDeadlines *timeout.Shared
	bodyTTL        time.Duration // for an admitted write's body to arrive
	retention      time.Duration
}

// New checks cfg and returns a Gateway that reports not ready until
// SetReady(true).
func New(cfg Config) (*Gateway, error) {
	if cfg.Pool == nil || cfg.Authority == nil || cfg.Policy == nil || cfg.Node == nil {
		return nil, errors.New("gateway: Config needs Pool, Authority, Policy and Node")
	}
	if cfg.MaxInFlight < 0 || cfg.QueueTimeout < 0 || cfg.BodyTimeout < 0 || cfg.MaxLeasesPerClient < 0 || cfg.MaxLeaseRequests < 0 {
		return nil, errors.New("gateway: MaxInFlight, QueueTimeout, BodyTimeout and the lease limits must not be negative")
	}
	g := &Gateway{
		cfg:        cfg,
		log:        cmp.Or(cfg.Logger, slog.Default()),
		maxBody:    cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes),
		writeTTL:   cmp.Or(cfg.WriteTimeout, DefaultWriteTimeout),
		bodyTTL:    cmp.Or(cfg.BodyTimeout, defaultBodyTimeout),
		retention:  cmp.Or(cfg.IdempotencyRetention, DefaultIdempotencyRetention),
		requestIDs: newRequestIDs(),
	}
	g.writeDeadlines = timeout.New(g.writeTTL)
	g.stopWaits, g.stopWaitsFunc = context.WithCancel(context.Background())
	// Built when first asked for: most gateways never are.
	g.openapi = sync.OnceValues(func() ([]byte, error) { return OpenAPI(cfg.Policy, buildinfo.Read().Version) })
	g.metrics = newMetrics(
		func() float64 { return float64(cfg.Authority.NewestRevision()) },
		func() float64 { return float64(cfg.Authority.Epoch()) },
		func() float64 { return float64(cfg.Node.Reaped()) },
	)
	writes := []string{policy.BatchName}
	for _, name := range cfg.Policy.OperationNames() {
		if !cfg.Policy.Operations[name].Read {
			writes = append(writes, name)
		}
	}
	g.metrics.forOperations(writes)
	g.metrics.registry.MustRegister(cfg.Node.Collectors()...)
	g.metrics.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fencegw_etcd_db_size_bytes",
			Help: "etcd's database file, as the last authority check read it (compaction frees space inside it; defragmentation shrinks it).",
		}, func() float64 { return float64(cfg.Authority.StoreSize().Total) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fencegw_etcd_db_size_in_use_bytes",
			Help: "The part of etcd's database file in use, as the last authority check read it.",
		}, func() float64 { return float64(cfg.Authority.StoreSize().InUse) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fencegw_signing_keys",
			Help: "Signing keys in service that this replica opened, as it last loaded them.",
		}, func() float64 { opened, _ := cfg.Authority.KeyCounts(); return float64(opened) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fencegw_signing_keys_unusable",
			Help: "Signing keys in etcd, in service or retired, that do not open here (a KEK this replica lacks, altered, stored in clear); the log names them.",
		}, func() float64 { _, unusable := cfg.Authority.KeyCounts(); return float64(unusable) }),
	)
	limit := cmp.Or(cfg.MaxInFlight, defaultMaxInFlight(cfg.Pool.Config().MaxConns))
	g.admit = admission.New(admission.Config{Limit: limit, Wait: cmp.Or(cfg.QueueTimeout, g.writeTTL), Refused: ErrOverloaded, What: "writes",
		Waiting: g.metrics.waiting, Waited: g.metrics.waited})
	g.metrics.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fencegw_writes_in_flight",
		Help: "Writes past the admission gate (see MaxInFlight).",
	}, func() float64 { return float64(g.admit.InFlight()) }))
	store, err := fence.New(fence.Config{
		Pool: cfg.Pool, WriteTimeout: g.writeTTL, UnsafeNoFence: cfg.UnsafeNoFence, GroupCommit: !cfg.NoGroupCommit,
		UnsafeIgnoreCommitWarnings: cfg.UnsafeIgnoreCommitWarnings,
		MaxTransactions:            cfg.MaxWriteTransactions,
		OnTransaction:              g.metrics.observeTransaction,
	})
	if err != nil {
		return nil, err
	}
	g.store = store
	g.metrics.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fencegw_writes_waiting_for_connection",
		Help: "Writes of coalescing resources waiting in line for one of the pool's connections (with group commit, the next group).",
	}, func() float64 { return float64(store.WaitingForConnection()) }))
	calls := cmp.Or(cfg.MaxLeaseRequests, DefaultMaxLeaseRequests)
	perClient := calls
	if cfg.Policy.AuthRequired() {
		perClient = max(1, calls/4)
	}
	g.leaseCalls = newCallLimit(calls, perClient)
	g.setUpWatches()
	for _, c := range cfg.Collectors {
		if err := g.metrics.registry.Register(c); err != nil {
			return nil, fmt.Errorf("gateway: Config.Collectors: %w", err)
		}
	}
	return g, nil
}

// allowedMethods is the Allow header of a 405 for path (RFC 9110): the
// methods router serves it with.
func allowedMethods(router chi.Routes, path string) string {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if router.Match(chi.NewRouteContext(), m, path) {
			allowed = append(allowed, m)
			if m == http.MethodGet {
				allowed = append(allowed, http.MethodHead)
			}
		}
	}
	return strings.Join(allowed, ", ")
}

// StopLeaseWaits ends every lease acquisition still waiting for its lock,
// revoking its lease and answering 503, and refuses new waits: a server
// shutting down must not leave waiters behind in etcd, nor hold a client
// past its drain. Acquisitions that need no wait still go through.
func (g *Gateway) StopLeaseWaits() { g.stopWaitsFunc() }

// SetReady flips /readyz: true once set up, false before shutting down so
// load balancers drain the replica first.
func (g *Gateway) SetReady(ready bool) { g.ready.Store(ready) }

// Handler returns the HTTP API.
func (g *Gateway) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	// HEAD wherever GET is served (RFC 9110), e.g. a load balancer's
	// HEAD /readyz.
	r.Use(middleware.GetHead)
	r.Use(g.checkClientCert)
	// Every route is registered with its whole pattern named for the
	// access log (routeNamed).
	get := func(pattern string, h http.Handler) {
		r.Method(http.MethodGet, pattern, routeNamed(pattern, h))
	}
	get("/livez", http.HandlerFunc(g.handleLive))
	get("/readyz", http.HandlerFunc(g.handleReady))
	if g.cfg.OpsListener {
		get("/metrics", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			g.writeProblem(w, req, fmt.Errorf("%w: %s %s: /metrics is served on the ops listener (--ops-listen) only", ErrNoRoute, req.Method, req.URL.Path), problemScope{})
		}))
	} else {
		get("/metrics", promhttp.HandlerFor(g.metrics.registry, promhttp.HandlerOpts{}))
	}
	// The page is a static shell: all it shows it reads from /v1/status
	// and the watch of every lock, behind the API's authentication (an
	// operator's client, where the policy declares clients).
	get("/status", http.HandlerFunc(g.handleStatusPage))
	get("/status/{file}", http.HandlerFunc(g.handleStatusFile))
	r.Route("/v1", func(r chi.Router) {
		v1 := func(r chi.Router, method, pattern string, h http.HandlerFunc) {
			r.Method(method, pattern, routeNamed("/v1"+pattern, h))
		}
		r.Use(g.authenticate)
		v1(r.With(g.admitCalls(g.prepareWrite)), http.MethodPost, "/ops/{operation}", g.handleWrite)
		v1(r.With(g.admitCalls(g.prepareBatch)), http.MethodPost, "/batch", g.handleBatch)
		v1(r.With(g.admitCalls(g.prepareRead)), http.MethodPost, "/reads/{operation}", g.handleRead)
		v1(r.With(g.admitCalls(g.prepareCheck)), http.MethodPost, "/fences/check", g.handleCheck)
		v1(r, http.MethodGet, "/openapi.json", g.handleOpenAPI)
		v1(r.With(g.limitLeaseCalls), http.MethodPost, "/leases", g.handleAcquire)
		v1(r.With(g.limitLeaseCalls), http.MethodGet, "/leases", g.handleObserve)
		v1(r, http.MethodGet, "/leases/watch", g.handleWatch) // bounded by watchCalls, apart
		v1(r, http.MethodPatch, "/leases/{id}", g.handleSetValue)
		// Renewals and releases are never refused for a lack of places:
		// each is one bounded etcd call, and a holder that cannot renew or
		// release would hold its lock the longer.
		v1(r, http.MethodPost, "/leases/{id}/keepalive", g.handleKeepAlive)
		v1(r, http.MethodDelete, "/leases/{id}", g.handleRelease)
		v1(r, http.MethodGet, "/status", g.handleStatus) // the status page's data, behind the API's authentication
		v1(r, http.MethodPost, "/admin/leases/revoke", g.handleRevoke)
		v1(r, http.MethodPost, "/admin/fences/advance", g.handleAdvance)
	})
	notFound := func(w http.ResponseWriter, r *http.Request) {
		g.writeProblem(w, r, fmt.Errorf("%w: %s %s", ErrNoRoute, r.Method, r.URL.Path), problemScope{})
	}
	r.NotFound(notFound)
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		path := req.URL.RawPath // what chi routes on, when set
		if path == "" {
			path = req.URL.Path
		}
		// chi answers 405 to a method it has no routes for (PROPFIND,
		// say) on any path; where no method is served the path is unknown.
		allowed := allowedMethods(r, path)
		if allowed == "" {
			notFound(w, req)
			return
		}
		w.Header().Set("Allow", allowed)
		g.writeProblem(w, req, fmt.Errorf("%w: %s on %s", ErrMethod, req.Method, req.URL.Path), problemScope{})
	})
	h := g.logAccess(r, g.gateWrites(r))
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// chi routes on the raw path where it differs from the decoded
		// one: /v1/ops/deb%69t would be an unknown operation to it and
		// debit to the gate, which reads the decoded path. Normalized
		// (RFC 3986 §6.2.2.2), it is debit to both; an escaped slash
		// stays one, inside its segment.
		if req.URL.RawPath != "" {
			req.URL.RawPath = decodeUnreserved(req.URL.RawPath)
		}
		h.ServeHTTP(w, req)
	})
}

package sqlfront

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/admission"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// Authority is what the front asks about tokens: package authority's
// Etcd. Validate judges a token exactly as the HTTP path does; Holder
// says whose a resource's lock is now (commitcheck.go).
type Authority interface {
	Validate(ctx context.Context, resource, client string, tok tokens.Token, mode tokens.Validation) error
	Holder(ctx context.Context, resource string) (tokens.Token, bool, error)
}

// Config says how the front serves.
type Config struct {
	Policy    *policy.Policy
	Authority Authority
	// Pool is the gateway's own connection pool: it registers sessions
	// and checks their roles, never runs a client's statement.
	Pool *pgxpool.Pool
	// Backend is how to reach PostgreSQL (the gateway's database URL,
	// parsed): each session logs in with it as its client's sql_role,
	// the user and password replaced.
	Backend *pgconn.Config
	// Password is the password a session logs in with as role; nil or
	// "": none (trust, peer or certificate authentication).
	Password func(role string) string
	// TLS, if set, is offered to clients that ask (SSLRequest); without
	// it a password is taken only from the loopback interface. With
	// ClientCAs (the client CAs in force, as serve reloads them), a
	// client's certificate, checked against them, names it as on HTTP.
	TLS       *tls.Config
	ClientCAs func() *x509.CertPool
	Audit     func(fence.Rejection) // refusals for fencegw.rejections; nil: logged only
	Logger    *slog.Logger
	// MaxConnections bounds the front's sessions, MaxClientConnections
	// one client's, so that one client's many connections cannot take
	// every other client's place. 0: DefaultMaxConnections and a quarter
	// of MaxConnections.
	MaxConnections, MaxClientConnections int
	// MaxTransactions bounds the sessions with work in PostgreSQL at
	// once: a transaction open, or a statement outside one. More wait
	// for a turn, shared fairly between clients (turn.go), at most
	// QueueTimeout; then the statement is refused, nothing of it sent.
	// 0: half of MaxConnections, and DefaultQueueTimeout.
	MaxTransactions int
	QueueTimeout    time.Duration
	// IdleInTransactionTimeout ends a session that has waited this long
	// for its client in a transaction, which holds its fence rows and
	// keeps the next holder waiting; IdleTimeout, one that has waited
	// this long outside a transaction; StatementTimeout cancels a
	// statement PostgreSQL has worked on this long. 0: no limit.
	IdleInTransactionTimeout, IdleTimeout, StatementTimeout time.Duration
	// MaxMessageBytes bounds one message from a client; a larger one
	// ends the session. 0: DefaultMaxMessageBytes.
	MaxMessageBytes int
	// Metrics, if set, report the front's gate (NewMetrics); one front
	// reports to them.
	Metrics *Metrics
}

// Defaults of Config.
const (
	DefaultMaxConnections  = 100
	DefaultMaxMessageBytes = 64 << 20
	DefaultQueueTimeout    = 30 * time.Second
	startupTimeout         = 15 * time.Second
)

// Server is the SQL front: it serves the sessions of the listeners
// given to Serve until Close.
type Server struct {
	cfg    Config
	log    *slog.Logger
	nextID atomic.Uint64

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]bool
	conns     map[net.Conn]bool      // every connection served, to close at the end
	perClient map[string]int         // sessions per client
	byKey     map[cancelKey]*session // for CancelRequest, by the key each session was given
	sessions  sync.WaitGroup
	gate      *admission.Gate // turns for transactions (turn.go)
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Policy == nil || cfg.Authority == nil || cfg.Pool == nil || cfg.Backend == nil {
		return nil, errors.New("sqlfront: Policy, Authority, Pool and Backend are required")
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxClientConnections <= 0 {
		cfg.MaxClientConnections = max(1, cfg.MaxConnections/4)
	}
	if cfg.MaxTransactions <= 0 {
		cfg.MaxTransactions = max(1, cfg.MaxConnections/2)
	}
	if cfg.QueueTimeout <= 0 {
		cfg.QueueTimeout = DefaultQueueTimeout
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	gate := admission.New(cfg.Metrics.gateConfig(admission.Config{Limit: cfg.MaxTransactions, Wait: cfg.QueueTimeout, Refused: errNoTurn, What: "transactions"}))
	cfg.Metrics.served(gate)
	return &Server{cfg: cfg, log: log.With("front", "sql"), listeners: map[net.Listener]bool{}, conns: map[net.Conn]bool{},
		perClient: map[string]int{}, byKey: map[cancelKey]*session{}, gate: gate}, nil
}

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("sqlfront: server closed")

// Serve accepts connections on ln and serves each until Close, or until
// accepting fails.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[ln] = true
	s.mu.Unlock()
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			delete(s.listeners, ln)
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			return fmt.Errorf("sqlfront: accept: %w", err)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return ErrServerClosed
		}
		over := len(s.conns) >= s.cfg.MaxConnections
		s.conns[nc] = false // starting: not a session yet
		s.sessions.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.sessions.Done()
			defer s.forget(nc)
			s.serveConn(nc, over)
		}()
	}
}

func (s *Server) forget(nc net.Conn) {
	nc.Close()
	s.mu.Lock()
	delete(s.conns, nc)
	s.mu.Unlock()
}

// Close stops accepting and ends every session: PostgreSQL rolls back
// what each had open, and each client is told the front is shutting
// down. It returns once every session has ended; one that does not
// hear it within closeGrace (its client reads nothing) is cut off.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for ln := range s.listeners {
		ln.Close()
	}
	var sessions []*session
	for _, ss := range s.byKey {
		sessions = append(sessions, ss)
	}
	var starting, all []net.Conn
	for nc, started := range s.conns {
		all = append(all, nc)
		if !started {
			starting = append(starting, nc)
		}
	}
	s.mu.Unlock()
	for _, ss := range sessions {
		ss.shutdown()
	}
	for _, nc := range starting {
		_ = nc.SetDeadline(time.Now())
	}
	done := make(chan struct{})
	go func() { s.sessions.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeGrace):
		for _, nc := range all {
			_ = nc.SetDeadline(time.Now())
		}
		<-done
	}
	return nil
}

// closeGrace is how long Close waits for sessions to end by themselves.
const closeGrace = 5 * time.Second

// started marks nc's session as begun: Close no longer cuts it off at
// once, but tells its client why it ends.
func (s *Server) started(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[nc] = true
	return true
}

// Sessions counts the sessions being served, per client.
func (s *Server) Sessions() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.perClient))
	for c, n := range s.perClient {
		out[c] = n
	}
	return out
}

// Turns counts the turns taken for transactions and the sessions
// waiting for one, per client.
func (s *Server) Turns() (held, waiting map[string]int) { return s.gate.Counts() }

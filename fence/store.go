// The Store, and the entry of every write: Apply hands a request of one
// coalescing resource to the coalescer (coalesce.go), and runs any other
// on a connection of its own: unkeyed, a lone write (lone.go); keyed, an
// explicit transaction (tx.go). Here too is the connection a request runs
// on (acquire, readyConn, usable), which every stage asks for.

package fence

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config is what a Store needs; Pool is required.
type Config struct {
	Pool *pgxpool.Pool
	// WriteTimeout bounds the PostgreSQL work of one transaction of
	// queued requests: their own deadlines no longer apply once they are
	// queued. The transactions that start together share one deadline
	// (package timeout), so one may run up to a hundredth longer.
	WriteTimeout time.Duration
	// OnTransaction, if set, is told how many requests each transaction of
	// coalesced or grouped writes carries.
	OnTransaction func(size int)
	// NoCoalescing applies every request alone, whatever its resource
	// says: one write, one commit, the baseline `fencegw bench` measures
	// the gateway against.
	NoCoalescing bool
	// GroupCommit lets coalescing resources whose policy does not say
	// otherwise share transactions: writes that wait for a connection are
	// committed together, tried whole first and each in its own savepoint
	// only once one has failed (several.go), a resource in at most one
	// transaction in flight.
	GroupCommit bool
	// MaxTransactions bounds the transactions of coalescing resources in
	// flight at once; requests that find them all busy wait in line (and
	// with group commit share the next one). 0: the pool's size, or with
	// group commit the smaller of that and groupTransactions(). With group
	// commit, a transaction beyond the first starts only when none has
	// started or ended for spillAfter.
	MaxTransactions int
	// UnsafeNoFence turns the fence check off. Only `fencegw torture`'s
	// control runs set it, to prove their checker can fail.
	UnsafeNoFence bool
	// UnsafeIgnoreCommitWarnings acknowledges a COMMIT that PostgreSQL
	// answered with a warning (a cancelled wait for synchronous
	// replication) as applied. Only `fencegw torture`'s control runs set
	// it, to prove their checker finds the writes a failover then loses.
	UnsafeIgnoreCommitWarnings bool
}

// Store applies fenced requests to PostgreSQL. It is safe for concurrent
// use and holds no state between requests besides the coalescer's queues.
type Store struct {
	pool                       *pgxpool.Pool
	unsafeNoFence              bool
	unsafeIgnoreCommitWarnings bool
	noCoalescing               bool
	groupCommit                bool
	coal                       *coalescer
	// prepare: implicit transactions go through sendBatch's prepared
	// statements (the pool's mode is pgx's default, which prepares).
	prepare bool
	// simpleProtocol: the pool sends statements in the simple protocol,
	// where an implicit transaction commits before its last answer.
	simpleProtocol bool
	names          statementNames
	// groupLockTimeout is a transaction of several requests' lock_timeout,
	// in milliseconds (groupLockSQL).
	groupLockTimeout string
}

// New returns a Store writing through cfg.Pool.
func New(cfg Config) (*Store, error) {
	if cfg.Pool == nil {
		return nil, errors.New("fence: Config needs a Pool")
	}
	if !hearsWarnings(cfg.Pool) {
		return nil, errors.New("fence: the pool does not hear PostgreSQL's warnings, and could acknowledge a commit it warned about: configure it with fence.ConfigurePool")
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	// A group's lock wait: a quarter of its deadline, or the sessions' own
	// lock_timeout if that is shorter (an operator's, in the URL).
	groupLock := max(cfg.WriteTimeout/4, time.Millisecond)
	if d, ok := parseLockTimeout(cfg.Pool.Config().ConnConfig.RuntimeParams["lock_timeout"]); ok && d > 0 {
		groupLock = min(groupLock, d)
	}
	s := &Store{pool: cfg.Pool, unsafeNoFence: cfg.UnsafeNoFence, unsafeIgnoreCommitWarnings: cfg.UnsafeIgnoreCommitWarnings, noCoalescing: cfg.NoCoalescing, groupCommit: cfg.GroupCommit,
		groupLockTimeout: strconv.FormatInt(groupLock.Milliseconds(), 10),
		prepare:          cfg.Pool.Config().ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement,
		simpleProtocol:   cfg.Pool.Config().ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeSimpleProtocol}
	// At most as many transactions at once as the pool has connections:
	// more would only wait in the pool's queue, where they could not be
	// grouped.
	lanes := int(cfg.Pool.Config().MaxConns)
	switch {
	case cfg.MaxTransactions > 0:
		lanes = min(lanes, cfg.MaxTransactions)
	case cfg.GroupCommit:
		lanes = min(lanes, groupTransactions())
	}
	// With group commit one transaction at a time, more only while it is
	// stuck: the largest groups (spillAfter).
	steady := lanes
	if cfg.GroupCommit {
		steady = 1
	}
	s.coal = newCoalescer(newCommitter(s, lanes, steady, cfg.WriteTimeout, cfg.OnTransaction))
	return s, nil
}

// Apply applies req: every fence advanced and every statement run in one
// transaction, or nothing. An unkeyed request costs one round trip; a keyed
// one two (the second stores its answer with the COMMIT), and a key that
// completed before is answered with its stored response (Replayed).
//
// A request of one coalescing resource that finds another of its resource
// in flight is queued and applied with the others queued meanwhile, in
// arrival order, under one COMMIT (tried whole first, each in its own
// savepoint only once one has failed: several.go); one that
// finds every connection busy waits in line, and with group commit is
// applied with other resources' requests in line, under one COMMIT. ctx
// bounds a request that runs at once; a queued request waits for its
// outcome even past ctx: once queued it will be attempted, and its caller
// must not be told anything before it is.
func (s *Store) Apply(ctx context.Context, req *Request) (Response, error) {
	if req.coalescable() && !s.noCoalescing {
		return s.coal.apply(ctx, req)
	}
	conn, err := s.acquire(ctx)
	if err != nil {
		return Response{}, err
	}
	defer conn.Release()
	return s.applyOn(ctx, conn, req)
}

// applyOn applies one request on a connection the caller holds.
func (s *Store) applyOn(ctx context.Context, conn *pgxpool.Conn, req *Request) (Response, error) {
	if req.IdempotencyKey == nil {
		return s.applyImplicit(ctx, conn, req)
	}
	p := &pending{req: req}
	s.runTx(ctx, conn, []*pending{p})
	s.answerReplays(ctx, conn, []*pending{p})
	return p.resp, p.err
}

// acquire takes a connection from the pool.
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: no PostgreSQL connection, nothing was written: %w", ErrUnavailable, err)
	}
	return conn, nil
}

// readyConn returns conn if it can carry a request, else gives it back
// and takes another from the pool. conn may be nil.
func (s *Store) readyConn(ctx context.Context, conn *pgxpool.Conn) (*pgxpool.Conn, error) {
	if conn != nil && usable(conn) {
		return conn, nil
	}
	if conn != nil {
		conn.Release()
	}
	return s.acquire(ctx)
}

// usable reports whether conn can carry a new request: open, not in the
// middle of another exchange, and outside any transaction (inside one, an
// implicit transaction's Sync would commit nothing).
func usable(conn *pgxpool.Conn) bool {
	pc := conn.Conn().PgConn()
	return !pc.IsClosed() && !pc.IsBusy() && pc.TxStatus() == 'I'
}

// errNotUsable refuses a request on a connection usable rejects; callers
// check first, so it is a last line of defence.
var errNotUsable = fmt.Errorf("%w: the PostgreSQL session was not idle, nothing was written", ErrUnavailable)

// parseLockTimeout reads a lock_timeout as PostgreSQL takes it from a
// connection string: whole milliseconds, or a number with a unit (ms, s,
// min, h, d). 0 turns the timeout off. ok is false for anything else,
// which PostgreSQL would refuse at connect.
func parseLockTimeout(v string) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	num := strings.TrimRightFunc(v, unicode.IsLetter)
	unit := strings.TrimSpace(v[len(num):])
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	scale := map[string]time.Duration{"": time.Millisecond, "ms": time.Millisecond, "s": time.Second, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	u, known := scale[unit]
	if !known || n > int64(math.MaxInt64/u) {
		return 0, false
	}
	return time.Duration(n) * u, true
}

// DB is what the functions that run a statement or two need: a pool, a
// pooled connection or a single connection.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

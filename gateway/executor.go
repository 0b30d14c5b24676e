package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// SQLSTATEs raised by the fencegw schema's functions.
const (
	sqlstateStale        = "FG409"
	sqlstatePrecondition = "FG412"
	// sqlstateGuard: a guard trigger (package guard) refused a row that
	// belongs to another resource than the write is fenced on.
	sqlstateGuard = "FG403"
)

// fenceSQL advances the fence with ONE conditional upsert (see migration
// 0001) or raises FG409, which aborts the whole batch.
const fenceSQL = "SELECT fencegw.fence($1, $2, $3, $4)"

// Write is one fenced write request. The token is an explicit field: there
// is no way to ask the executor for an unfenced write.
type Write struct {
	Operation *policy.Operation
	Args      policy.Values
	Resource  string
	Token     tokens.Token
}

// Result is what an applied write returns to the client.
type Result struct {
	Operation  string            `json:"operation"`
	Resource   string            `json:"resource"`
	Token      tokens.Token      `json:"token"`
	Statements []StatementResult `json:"statements"`
}

// StatementResult is the outcome of one statement of the operation.
type StatementResult struct {
	RowsAffected int64           `json:"rows_affected"`
	Rows         json.RawMessage `json:"rows,omitempty"` // as PostgreSQL rendered it
}

// Executor applies fenced writes to PostgreSQL.
type Executor struct {
	pool *pgxpool.Pool
	// unsafeNoFence replaces the fence with a statement that accepts every
	// token. It exists only so `fencegw torture` can show its checker
	// catching the stale writes fencing prevents.
	unsafeNoFence bool
}

// NewExecutor returns an executor writing through pool.
func NewExecutor(pool *pgxpool.Pool) *Executor { return &Executor{pool: pool} }

// unfencedSQL stands in for fenceSQL in unsafe mode: one result, like the
// fence, and the same transaction-local setting, but no check.
const unfencedSQL = "SELECT set_config('fencegw.resource', $1, true)"

// Execute applies w in one PostgreSQL round trip: the fence advance and the
// operation's statements are pipelined as one batch, which PostgreSQL runs
// as one implicit transaction ending at the batch's single Sync. A stale
// token or a failed row expectation raises inside the database and rolls
// the whole batch back, so nothing is acknowledged that did not commit and
// nothing commits that was refused. ctx bounds the round trip.
func (e *Executor) Execute(ctx context.Context, w Write) (Result, error) {
	conn, err := e.acquire(ctx)
	if err != nil {
		return Result{}, err
	}
	defer conn.Release()
	return e.executeOn(ctx, conn, w)
}

// acquire takes a connection from the pool for one write or batch.
func (e *Executor) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: no PostgreSQL connection, nothing was written: %w", ErrUnavailable, err)
	}
	return conn, nil
}

// readyConn returns conn if it can carry a write, else gives it back and
// takes another from the pool. conn may be nil.
func (e *Executor) readyConn(ctx context.Context, conn *pgxpool.Conn) (*pgxpool.Conn, error) {
	if conn != nil && usable(conn) {
		return conn, nil
	}
	if conn != nil {
		conn.Release()
	}
	return e.acquire(ctx)
}

// executeOn is Execute on a connection the caller holds.
func (e *Executor) executeOn(ctx context.Context, conn *pgxpool.Conn, w Write) (Result, error) {
	if !usable(conn) {
		return Result{}, errNotUsable
	}
	op := w.Operation
	b := batchPool.Get().(*pgx.Batch)
	e.queueWrite(b, w)
	br := conn.SendBatch(ctx, b)
	res := Result{Operation: op.Name, Resource: w.Resource, Token: w.Token}
	err := readWrite(br, op, &res)
	// Close reports the outcome of the commit itself: only a nil here means
	// the write is durable and may be acknowledged.
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	recycle(b)
	if err != nil {
		return Result{}, classify(err, w)
	}
	return res, nil
}

// apply runs one write on its own and renders its answer: at most once
// with idem (ExecuteOnce), else in one round trip (Execute).
func (e *Executor) apply(ctx context.Context, w Write, idem *Idempotency) (Reply, error) {
	conn, err := e.acquire(ctx)
	if err != nil {
		return Reply{}, err
	}
	defer conn.Release()
	return e.applyOn(ctx, conn, w, idem)
}

// applyOn is apply on a connection the caller holds.
func (e *Executor) applyOn(ctx context.Context, conn *pgxpool.Conn, w Write, idem *Idempotency) (Reply, error) {
	if idem != nil {
		return e.executeOnceOn(ctx, conn, w, *idem, renderResult)
	}
	res, err := e.executeOn(ctx, conn, w)
	if err != nil {
		return Reply{}, err
	}
	body, err := renderResult(res)
	return Reply{Status: http.StatusOK, Body: body}, err
}

// queueWrite queues the fence advance and the operation's statements.
func (e *Executor) queueWrite(b *pgx.Batch, w Write) {
	op := w.Operation
	if e.unsafeNoFence {
		queue(b, unfencedSQL, w.Resource)
	} else {
		queue(b, fenceSQL, w.Resource, w.Token.Epoch, w.Token.Revision, op.Resource.Compare == policy.Strict)
	}
	for i := range op.Statements {
		st := &op.Statements[i]
		queue(b, st.SQL, op.Bind(st, w.Args, w.Resource, w.Token)...)
	}
}

// batchPool recycles the batches of lone writes with the QueuedQuery
// structs pgx would otherwise allocate anew for every statement of every
// write. pgx (v5.12) lets go of a batch when its results are closed; a
// BatchTracer that kept it past TraceBatchEnd would break this.
var batchPool = sync.Pool{New: func() any { return new(pgx.Batch) }}

// queue is pgx's Batch.Queue, reusing a QueuedQuery left in b's backing
// array by recycle.
func queue(b *pgx.Batch, sql string, args ...any) {
	n := len(b.QueuedQueries)
	if n < cap(b.QueuedQueries) {
		if qq := b.QueuedQueries[:n+1][n]; qq != nil {
			*qq = pgx.QueuedQuery{SQL: sql, Arguments: args}
			b.QueuedQueries = b.QueuedQueries[:n+1]
			return
		}
	}
	b.QueuedQueries = append(b.QueuedQueries, &pgx.QueuedQuery{SQL: sql, Arguments: args})
}

// recycle returns a batch whose results are closed to batchPool, cleared
// of everything that belonged to its write (arguments, pgx's statement
// descriptions), keeping the structs for queue.
func recycle(b *pgx.Batch) {
	for _, qq := range b.QueuedQueries {
		*qq = pgx.QueuedQuery{}
	}
	b.QueuedQueries = b.QueuedQueries[:0]
	batchPool.Put(b)
}

// readWrite reads the results queued by queueWrite into res.
func readWrite(br pgx.BatchResults, op *policy.Operation, res *Result) error {
	if _, err := br.Exec(); err != nil {
		return err
	}
	res.Statements = make([]StatementResult, len(op.Statements))
	for i := range op.Statements {
		out := &res.Statements[i]
		switch op.Statements[i].Kind {
		case policy.Plain:
			tag, err := br.Exec()
			if err != nil {
				return err
			}
			out.RowsAffected = tag.RowsAffected()
		case policy.Counted:
			if err := br.QueryRow().Scan(&out.RowsAffected); err != nil {
				return err
			}
		case policy.Rows:
			// Into []byte, not json.RawMessage: pgx would run the latter
			// through json.Unmarshal, and PostgreSQL made it.
			var rows []byte
			if err := br.QueryRow().Scan(&out.RowsAffected, &rows); err != nil {
				return err
			}
			out.Rows = rows
		}
	}
	return nil
}

// classify turns a failed batch into the gateway's errors. The outcome
// rule: an ERROR from PostgreSQL aborts the transaction before its commit
// completes, so nothing was applied; a FATAL or a broken connection after
// the batch was sent may come after the commit, so the outcome is unknown.
func classify(err error, w Write) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch severity := cmp.Or(pgErr.SeverityUnlocalized, pgErr.Severity); {
		case severity == "FATAL" || severity == "PANIC":
			return fmt.Errorf("%w (%w): PostgreSQL ended the session mid-write: %w", ErrUnavailable, ErrOutcomeUnknown, err)
		case pgErr.Code == sqlstateStale:
			current, perr := tokens.Parse(pgErr.Detail)
			if perr != nil {
				return fmt.Errorf("gateway: fence raised without a current token: %w", err)
			}
			return &StaleTokenError{Resource: w.Resource, Presented: w.Token, Current: current}
		case pgErr.Code == sqlstatePrecondition:
			return &PreconditionError{Operation: w.Operation.Name, Message: pgErr.Message}
		case pgErr.Code == sqlstateGuard:
			return &ConstraintError{Constraint: "fencegw_guard", Message: pgErr.Message}
		case pgerrcode.IsIntegrityConstraintViolation(pgErr.Code):
			return &ConstraintError{Constraint: pgErr.ConstraintName, Message: pgErr.Message}
		case pgerrcode.IsDataException(pgErr.Code):
			return badRequest("the database refused an argument value: %s (SQLSTATE %s)", pgErr.Message, pgErr.Code)
		case pgErr.Code == pgerrcode.LockNotAvailable:
			return fmt.Errorf("%w: the resource stayed locked by another write past lock_timeout, nothing was written: %w", ErrUnavailable, err)
		case pgerrcode.IsTransactionRollback(pgErr.Code), pgerrcode.IsInsufficientResources(pgErr.Code),
			pgerrcode.IsOperatorIntervention(pgErr.Code), pgerrcode.IsConnectionException(pgErr.Code):
			return fmt.Errorf("%w: PostgreSQL rolled the write back, retry: %w", ErrUnavailable, err)
		}
		return fmt.Errorf("gateway: operation %s: %w", w.Operation.Name, err)
	}
	var pre pgx.ErrPreprocessingBatch
	if errors.As(err, &pre) && strings.HasPrefix(pre.Error(), "error preprocessing batch (build)") {
		// pgx refused to encode an argument for its column (e.g. 3e9 for
		// an int4) before sending anything. (Its other step, "prepare",
		// talks to the server and can fail like any round trip.)
		return badRequest("an argument does not fit its column: %v", pre.Unwrap())
	}
	if sentNothing(err) {
		return fmt.Errorf("%w: PostgreSQL not reached, nothing was written: %w", ErrUnavailable, err)
	}
	// The batch may have reached the server and committed before the
	// connection failed: say so rather than guess.
	return fmt.Errorf("%w (%w): the connection to PostgreSQL failed mid-write: %w", ErrUnavailable, ErrOutcomeUnknown, err)
}

// sentNothing reports whether err proves that the batch never left. pgx
// marks its "conn closed" error safe to retry, but it also returns it when
// a read fails after the whole batch went out (MultiResultReader.NextResult
// drops the read error, and the next read finds the connection closed):
// that batch may have committed. So that error proves nothing.
func sentNothing(err error) bool {
	return pgconn.SafeToRetry(err) && !errors.Is(err, pgconn.ErrConnClosed)
}

// usable reports whether conn can carry a new write: open, not in the
// middle of another exchange, and outside any transaction (inside one, an
// implicit transaction's Sync would commit nothing).
func usable(conn *pgxpool.Conn) bool {
	pc := conn.Conn().PgConn()
	return !pc.IsClosed() && !pc.IsBusy() && pc.TxStatus() == 'I'
}

// errNotUsable refuses a write on a connection usable rejects; callers
// check first, so it is a last line of defence.
var errNotUsable = fmt.Errorf("%w: the PostgreSQL session was not idle, nothing was written", ErrUnavailable)

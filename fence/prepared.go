// An implicit transaction's pipeline (a lone write, or a group of unkeyed
// writes) is sent as pgconn's batch of statements prepared by name on the
// connection, rather than through pgx's SendBatch: pgx's pipeline keeps
// lists of every message it sent and every answer it awaits, a handful of
// allocations per statement on every write, where pgconn's batch is one
// buffer sent whole and read back in order. The statements and their
// arguments' encoding are pgx's own (Conn.Prepare, the extended query
// builder), so a write is the same bytes on the wire either way.
//
// A statement prepared on a connection can go stale: a migration that
// changes what it returns ("cached plan must not change result type"), or
// a session whose statements were dropped (DISCARD ALL). Its batch fails
// before anything commits; the connection then forgets the batch's
// statements (forgetStatements) and applyImplicit runs the request once
// more, prepared anew (tryImplicit a group's).

package fence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/internal/timeout"
)

// batchResults is what reading a request's pipeline needs of pgx's
// BatchResults, which preparedResults also is.
type batchResults interface {
	Exec() (pgconn.CommandTag, error)
	QueryRow() pgx.Row
	Close() error
}

// statementNames names each SQL text's prepared statement, the same name
// on every connection, apart from pgx's own statement cache, whose names
// and invalidation are its own.
type statementNames struct {
	mu    sync.RWMutex
	names map[string]string
}

func (n *statementNames) of(sql string) string {
	n.mu.RLock()
	name, ok := n.names[sql]
	n.mu.RUnlock()
	if ok {
		return name
	}
	sum := sha256.Sum256([]byte(sql))
	name = "fencegw_" + hex.EncodeToString(sum[:16])
	n.mu.Lock()
	if n.names == nil {
		n.names = map[string]string{}
	}
	n.names[sql] = name
	n.mu.Unlock()
	return name
}

// sendBatch sends b on conn as one implicit transaction, through pgconn's
// batch of prepared statements when the pool prepares statements (pgx's
// default mode), else through pgx's SendBatch (a pool set to describe or
// not to prepare, for a connection pooler, keeps its mode).
func (s *Store) sendBatch(ctx context.Context, conn *pgxpool.Conn, b *pgx.Batch) batchResults {
	if !s.prepare {
		return conn.SendBatch(ctx, b)
	}
	r := preparedPool.Get().(*preparedResults)
	r.send(ctx, s, conn.Conn(), b)
	return r
}

// preparedResults is a batch sent by sendBatch and its results, read in
// the order of its statements. Its first error sticks, as pgx's does. It
// goes back to preparedPool when closed: nothing may use it after Close.
type preparedResults struct {
	ctx   context.Context
	conn  *pgx.Conn
	mrr   *pgconn.MultiResultReader
	eqb   pgx.ExtendedQueryBuilder
	names []string // the batch's statements, to forget if they went stale
	err   error
	// connDeadline: the connection's deadline bounds the batch
	// (boundByConn), to be lifted when it is read.
	connDeadline bool
}

var preparedPool = sync.Pool{New: func() any { return new(preparedResults) }}

// send prepares what b's statements need on conn (a round trip for each
// one new to the connection), encodes their arguments and sends them all
// with one Sync. A statement that cannot be prepared, or an argument that
// cannot be encoded, sends nothing: the error is the first result's.
func (r *preparedResults) send(ctx context.Context, s *Store, conn *pgx.Conn, b *pgx.Batch) {
	r.ctx, r.conn = ctx, conn
	var pb pgconn.Batch
	for _, qq := range b.QueuedQueries {
		name := s.names.of(qq.SQL)
		r.names = append(r.names, name)
		sd, err := conn.Prepare(ctx, name, qq.SQL)
		if err != nil {
			r.err = err
			return
		}
		if err := r.eqb.Build(conn.TypeMap(), sd, qq.Arguments); err != nil {
			r.err = &buildError{sql: qq.SQL, err: err}
			return
		}
		// Results in text: what is read back is a count or JSON, and
		// text needs no result formats kept per statement.
		pb.ExecStatement(sd, r.eqb.ParamValues, r.eqb.ParamFormats, nil)
	}
	ctx, r.connDeadline = boundByConn(ctx, conn.PgConn())
	r.mrr = conn.PgConn().ExecBatch(ctx, &pb)
}

// boundByConn returns the context to send a batch with on pc. A context
// done at its deadline and at no other time (a write's, or a group's:
// package timeout) is not watched: pc's own deadline is set to it, and
// pgconn gets a context it need not watch (watching one is a handful of
// allocations per round trip). Past that deadline a read fails as it
// would had pgconn's watch seen the context done (pgx's default handler
// sets the same deadline then), and pgconn cancels the statement on the
// server and closes the connection. Any other context is watched as
// usual; byConn says whether the connection's deadline was set.
func boundByConn(ctx context.Context, pc *pgconn.PgConn) (_ context.Context, byConn bool) {
	deadline, ok := timeout.DoneOnlyAt(ctx)
	if !ok || ctx.Err() != nil { // done already: pgconn refuses it before sending anything
		return ctx, false
	}
	if err := pc.Conn().SetDeadline(deadline); err != nil {
		return ctx, false
	}
	return context.Background(), true
}

// next is the next statement's result, or the batch's first error.
func (r *preparedResults) next() (*pgconn.ResultReader, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.mrr.NextResult() {
		return r.mrr.ResultReader(), nil
	}
	if r.err = r.mrr.Close(); r.err == nil {
		r.err = errors.New("fence: PostgreSQL answered fewer statements than were sent")
	}
	return nil, r.err
}

// Exec reads the next statement's result, discarding its rows.
func (r *preparedResults) Exec() (pgconn.CommandTag, error) {
	rr, err := r.next()
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := rr.Close()
	if err != nil {
		r.err = err
	}
	return tag, err
}

// QueryRow reads the next statement's first row.
func (r *preparedResults) QueryRow() pgx.Row { return (*preparedRow)(r) }

type preparedRow preparedResults

// Scan reads the first row of the next statement's result into dest, one
// column each, as pgx's QueryRow does: pgx.ErrNoRows when it has none.
func (row *preparedRow) Scan(dest ...any) error {
	r := (*preparedResults)(row)
	rr, err := r.next()
	if err != nil {
		return err
	}
	if !rr.NextRow() {
		if _, err := rr.Close(); err != nil {
			r.err = err
			return err
		}
		return pgx.ErrNoRows
	}
	if err := scanRow(r.conn.TypeMap(), rr.FieldDescriptions(), rr.Values(), dest); err != nil {
		_, _ = rr.Close()
		return err
	}
	if _, err := rr.Close(); err != nil {
		r.err = err
		return err
	}
	return nil
}

func scanRow(m *pgtype.Map, fields []pgconn.FieldDescription, values [][]byte, dest []any) error {
	if len(fields) != len(dest) || len(values) != len(dest) {
		return fmt.Errorf("fence: a row of %d columns read into %d values", len(values), len(dest))
	}
	for i := range dest {
		if err := m.Scan(fields[i].DataTypeOID, fields[i].Format, values[i], dest[i]); err != nil {
			return fmt.Errorf("fence: reading column %s: %w", fields[i].Name, err)
		}
	}
	return nil
}

// Close reads what is left of the batch up to its Sync and returns its
// first error: nil only if the implicit transaction committed. A batch
// whose statements went stale has them forgotten on its connection.
func (r *preparedResults) Close() error {
	err := r.err
	if r.mrr != nil {
		if cerr := r.mrr.Close(); err == nil {
			err = cerr
		}
	}
	if pc := r.conn.PgConn(); r.connDeadline && !pc.IsClosed() {
		// Lifted for the connection's next user. A closed one keeps it:
		// pgconn's own deadline bounds its goodbye.
		_ = pc.Conn().SetDeadline(time.Time{})
	}
	if staleStatement(err) {
		r.forgetStatements()
	}
	*r = preparedResults{eqb: r.eqb, names: r.names[:0]}
	preparedPool.Put(r)
	return err
}

// forgetStatements drops the batch's prepared statements from its
// connection, on the server and in pgx's map, so that their next use
// prepares them anew. If the connection cannot, it is closed: the pool
// then replaces it.
func (r *preparedResults) forgetStatements() {
	if r.conn.PgConn().IsClosed() {
		return
	}
	ctx := context.WithoutCancel(r.ctx)
	for _, name := range r.names {
		if err := r.conn.Deallocate(ctx, name); err != nil {
			_ = r.conn.Close(ctx)
			return
		}
	}
}

// staleStatement reports whether err is PostgreSQL refusing a prepared
// statement that no longer fits the schema or the session: nothing of
// its batch ran, and the same statement prepared again would.
func staleStatement(err error) bool {
	if err == nil {
		return false // before errors.As, whose target would escape on every write
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case pgerrcode.InvalidSQLStatementName: // "prepared statement … does not exist"
		return true
	case pgerrcode.FeatureNotSupported:
		return strings.Contains(pgErr.Message, "cached plan must not change result type")
	}
	return false
}

// buildError is an argument that pgx cannot encode for its statement's
// parameter (3e9 for an int4), found before anything was sent.
type buildError struct {
	sql string
	err error
}

func (e *buildError) Error() string {
	return fmt.Sprintf("fence: encoding the arguments of %q: %v", e.sql, e.err)
}

func (e *buildError) Unwrap() error { return e.err }

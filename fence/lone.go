// A lone write: an unkeyed request is one implicit transaction, one round
// trip. Its pipeline (pipeline.go) goes out as one batch ending in a single
// Sync (prepared.go), its results are read back and the commit's warnings
// heard (commitwarning.go); an error is classified (classify.go), and what
// applied is answered (answer.go). A keyed request runs in an explicit
// transaction instead (tx.go), and requests that share a transaction run
// as a transaction of several (several.go).

package fence

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// applyImplicit applies an unkeyed request in one round trip: the fences
// and statements pipelined as one batch ending in a single Sync, which
// PostgreSQL runs as one implicit transaction. A stale token or a failed
// row expectation raises inside the database and rolls all of it back, so
// nothing is acknowledged that did not commit and nothing commits that was
// refused. A prepared statement gone stale (a migration changed what it
// returns) failed the batch before anything committed: it runs once more,
// prepared anew.
func (s *Store) applyImplicit(ctx context.Context, conn *pgxpool.Conn, req *Request) (Response, error) {
	if !usable(conn) {
		return Response{}, errNotUsable
	}
	b := batchPool.Get().(*pgx.Batch)
	defer recycle(b)
	s.queueRequest(b, req)
	results, at, err := s.roundTrip(ctx, conn, b, req)
	if staleStatement(err) && usable(conn) {
		results, at, err = s.roundTrip(ctx, conn, b, req)
	}
	if err != nil {
		return Response{}, classify(err, true, req, at)
	}
	return answer(req, results), nil
}

// roundTrip sends b, req's pipeline, and reads its results.
func (s *Store) roundTrip(ctx context.Context, conn *pgxpool.Conn, b *pgx.Batch, req *Request) ([]Result, failedAt, error) {
	pc := conn.Conn().PgConn()
	sent := heard(pc)
	br := s.sendBatch(ctx, conn, b)
	results, at, err := readRequest(br, req)
	// Closing reports the outcome of the commit itself: only a nil here
	// means the request is durable and may be acknowledged.
	if cerr := s.closeCommit(pc, br, sent); err == nil {
		err, at = cerr, nowhere
	}
	return results, at, err
}

// batchPool recycles the batches of lone requests with the QueuedQuery
// structs pgx would otherwise allocate anew for every statement. pgx
// (v5.12) lets go of a batch when its results are closed; a BatchTracer
// that kept it past TraceBatchEnd would break this.
var batchPool = sync.Pool{New: func() any { return new(pgx.Batch) }}

// recycle returns a batch whose results are closed to batchPool, cleared
// of everything that belonged to its request (arguments, pgx's statement
// descriptions), keeping the structs for queue.
func recycle(b *pgx.Batch) {
	for _, qq := range b.QueuedQueries {
		*qq = pgx.QueuedQuery{}
	}
	b.QueuedQueries = b.QueuedQueries[:0]
	batchPool.Put(b)
}

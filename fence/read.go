package fence

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/tokens"
)

// A read (a policy operation of kind read, or a check of tokens alone) runs
// under the fence without advancing it: the holder of a token learns, at
// read time, whether a successor has written since (Chubby's
// CheckSequencer), instead of finding out only when it writes what it
// decided on stale data.
//
// It is one round trip, one transaction:
//
//	BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY
//	SELECT epoch, revision FROM fencegw.fences WHERE resource = $1   -- each fence, canonical order
//	<the operation's SELECTs>
//	COMMIT
//
// One snapshot holds for all of it, so the rows read are exactly those the
// fences read saw: a write that commits after the snapshot changes neither.
// The read is thus linearized at its snapshot, which a FOR SHARE lock on
// the fence rows would also give, but at the price of blocking the
// resource's writers meanwhile, and of the read-only mode: PostgreSQL
// refuses row locks in a read-only transaction, and read-only is what
// makes a read that calls a writing function fail instead of writing.
//
// A token passes if it is not older than its resource's fence; an equal
// one passes on a strict resource too (a read spends nothing). A resource
// without a fence row (never written, or pruned) is fenced at the fence
// floor, as fencegw.fence does: a token at or below it is refused. The
// floor is read in the read's snapshot with the row: a row pruned before
// the snapshot went under a floor that committed no later, so the
// snapshot sees one or the other.

// readBeginSQL starts a read's transaction.
const readBeginSQL = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

// readFenceSQL reads one fence and the fence floor; the fence's columns
// are NULL when the resource has no row.
const readFenceSQL = `SELECT f.epoch, f.revision, fl.epoch, fl.revision
	FROM fencegw.fence_floor fl LEFT JOIN fencegw.fences f ON f.resource = $1`

// ReadResult is what a read returns: per write (one, for a read operation)
// its statements' results, and the fence of each of its resources as the
// read saw it.
type ReadResult struct {
	Results []Result
	fences  map[string]tokens.Token
}

// Fence returns resource's fence as the read saw it; ok false if the
// resource was never written.
func (r ReadResult) Fence(resource string) (t tokens.Token, ok bool) {
	t, ok = r.fences[resource]
	return t, ok
}

// Read runs req, whose writes are reads (their operations only SELECT; a
// check has no statements at all), in one read-only transaction with its
// fences read, on a connection of its own: a read never waits in the
// coalescing line nor takes a write transaction's place. A token older
// than its fence is refused with *StaleTokenError, and no rows are
// returned. Errors are Apply's, and none means anything was written.
func (s *Store) Read(ctx context.Context, req *Request) (ReadResult, error) {
	conn, err := s.acquire(ctx)
	if err != nil {
		return ReadResult{}, err
	}
	defer conn.Release()
	if !usable(conn) {
		return ReadResult{}, errNotUsable
	}
	b := &pgx.Batch{}
	b.Queue(readBeginSQL)
	for _, f := range req.fences {
		b.Queue(readFenceSQL, f.resource)
	}
	args := make([]any, 0, req.params())
	for wi := range req.Writes {
		w := &req.Writes[wi]
		for i := range w.Operation.Statements {
			st := &w.Operation.Statements[i]
			start := len(args)
			args = w.Operation.Bind(args, st, w.Args, w.Resources, w.Tokens)
			b.Queue(st.SQL, args[start:len(args):len(args)]...)
		}
	}
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	res, at, err := s.readRead(br, req)
	if cerr := br.Close(); err == nil && cerr != nil {
		err, at = cerr, nowhere
	}
	if err != nil {
		var stale *StaleTokenError
		if errors.As(err, &stale) {
			return ReadResult{}, err
		}
		return ReadResult{}, classify(err, false, req, at)
	}
	return res, nil
}

// readRead reads a read's results in the order Read queued them, and
// refuses the first token older than its fence.
func (s *Store) readRead(br pgx.BatchResults, req *Request) (ReadResult, failedAt, error) {
	if _, err := br.Exec(); err != nil {
		return ReadResult{}, nowhere, err
	}
	res := ReadResult{fences: make(map[string]tokens.Token, len(req.fences))}
	for i, f := range req.fences {
		var epoch, revision *int64
		// A permit slot's fence and floor hold that slot's tokens, shown
		// E:R#k as the token presented is.
		floor := tokens.Token{Permit: f.token.Permit}
		if err := br.QueryRow().Scan(&epoch, &revision, &floor.Epoch, &floor.Revision); err != nil {
			return ReadResult{}, failedAt{fence: i, write: -1}, err
		}
		if epoch == nil {
			if f.token.Compare(floor) <= 0 && !s.unsafeNoFence {
				w := &req.Writes[f.write]
				return ReadResult{}, nowhere, req.InWrite(f.write, &StaleTokenError{
					Role: w.Operation.Roles[f.role].Name, Resource: f.resource, Presented: f.token.Unsigned(), Current: floor,
				})
			}
			continue
		}
		cur := tokens.Token{Epoch: *epoch, Revision: *revision, Permit: f.token.Permit}
		res.fences[f.resource] = cur
		if f.token.Compare(cur) < 0 && !s.unsafeNoFence {
			w := &req.Writes[f.write]
			return ReadResult{}, nowhere, req.InWrite(f.write, &StaleTokenError{
				Role: w.Operation.Roles[f.role].Name, Resource: f.resource, Presented: f.token.Unsigned(), Current: cur,
			})
		}
	}
	res.Results = make([]Result, len(req.Writes))
	for wi := range req.Writes {
		op := req.Writes[wi].Operation
		res.Results[wi].Statements = make([]StatementResult, len(op.Statements))
		for i := range op.Statements {
			if err := readStatement(br, op.Statements[i].Kind, &res.Results[wi].Statements[i]); err != nil {
				return ReadResult{}, failedAt{fence: -1, write: wi}, err
			}
		}
	}
	if _, err := br.Exec(); err != nil {
		return ReadResult{}, nowhere, fmt.Errorf("fence: read: %w", err)
	}
	return res, nowhere, nil
}

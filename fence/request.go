// Requests, writes and fences: what a client call asks for, checked and
// put in canonical order before any of it reaches PostgreSQL.

package fence

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// Write is one call of a policy operation. The tokens are explicit fields:
// there is no way to ask for an unfenced write.
type Write struct {
	Operation *policy.Operation
	Args      policy.Values
	Resources []string       // the resource of each role, indexed like Operation.Roles
	Tokens    []tokens.Token // the token presented for each role
}

// IdempotencyKey is an Idempotency-Key header's value in its scope: the
// client and what it was sent to (an operation's name, or a batch), with
// the request's fingerprint.
type IdempotencyKey struct {
	Client      string
	Scope       string
	Value       string
	Fingerprint [32]byte
	Retention   time.Duration // how long a completed key is kept
}

// Request is what one client call asks for: one write, or an atomic batch
// of writes, applied all or nothing. Build it with NewRequest or NewBatch.
type Request struct {
	Writes         []Write
	IdempotencyKey *IdempotencyKey // nil without an Idempotency-Key
	// Batch says the writes came as a batch (NewBatch), whose answer
	// lists them even when there is one.
	Batch bool
	// NotAfter, if set, is the request's business deadline: PostgreSQL
	// refuses it (*DeadlineError) if its clock is past NotAfter when the
	// request's fences are advanced, whatever the gateway's clock says.
	NotAfter time.Time

	// fences are every write's fences, one per resource, in canonical
	// order (by resource name): every transaction locks fence rows in that
	// order, so two requests can never wait on each other's fences.
	fences []fence
	one    [1]fence  // fences' storage for the common request of one fence
	result [1]Result // results' storage for a request of one write
	// statements' storage for that write's results, when it has this
	// many statements or fewer
	statements [4]StatementResult
}

// ListsWrites reports whether the answer lists the writes: a batch, even of
// one write, or more than one write. Such a request's errors name the
// write they belong to.
func (r *Request) ListsWrites() bool { return r.Batch || len(r.Writes) > 1 }

// InWrite names write i as the one err belongs to, if r lists its writes;
// otherwise err is the whole request's and is returned as it is.
func (r *Request) InWrite(i int, err error) error {
	if r.ListsWrites() {
		return &WriteError{Index: i, Operation: r.Writes[i].Operation.Name, Err: err}
	}
	return err
}

// fence is one fence row a request advances.
type fence struct {
	resource string
	token    tokens.Token
	strict   bool // token > fence, not >=: any of its writes' kinds is strict
	write    int  // the first write fenced on it, for errors
	role     int  // that write's role
}

// NewRequest checks and orders the fences of writes. Within one write, each
// role must name another resource; within one request, a resource may be
// fenced by several writes only under one token, and its fence advances
// once. Either breach is ErrConflict.
func NewRequest(writes []Write, key *IdempotencyKey) (*Request, error) {
	return newRequest(writes, key, false)
}

// NewBatch is NewRequest for writes sent as a batch: its answer lists
// them, even one, and its errors name the write they belong to.
func NewBatch(writes []Write, key *IdempotencyKey) (*Request, error) {
	return newRequest(writes, key, true)
}

func newRequest(writes []Write, key *IdempotencyKey, batch bool) (*Request, error) {
	req := &Request{Writes: writes, IdempotencyKey: key, Batch: batch}
	if len(writes) == 1 && len(writes[0].Resources) == 1 {
		w := &writes[0]
		req.one[0] = fence{resource: w.Resources[0], token: w.Tokens[0], strict: w.Operation.Roles[0].Kind.Compare == policy.Strict}
		req.fences = req.one[:]
		return req, nil
	}
	for wi := range writes {
		w := &writes[wi]
		for ri, key := range w.Resources {
			if j := slices.Index(w.Resources[:ri], key); j >= 0 {
				return nil, inWrite(req, failedAt{-1, wi}, fmt.Errorf("%w: roles %s and %s of %s are both %s: a write's roles must be different resources",
					ErrConflict, w.Operation.Roles[j].Name, w.Operation.Roles[ri].Name, w.Operation.Name, key))
			}
		}
		for ri, key := range w.Resources {
			strict := w.Operation.Roles[ri].Kind.Compare == policy.Strict
			i, found := slices.BinarySearchFunc(req.fences, key, func(f fence, k string) int { return cmp.Compare(f.resource, k) })
			if !found {
				req.fences = slices.Insert(req.fences, i, fence{resource: key, token: w.Tokens[ri], strict: strict, write: wi, role: ri})
				continue
			}
			f := &req.fences[i]
			if f.token != w.Tokens[ri] && f.token.Unsigned() == w.Tokens[ri].Unsigned() {
				return nil, inWrite(req, failedAt{-1, wi}, fmt.Errorf("%w: %s is fenced with %s by write %d and by write %d, but signed differently (or once without a signature): send the token as the lease granted it, the same in every write",
					ErrConflict, key, f.token.Unsigned(), f.write, wi))
			}
			if f.token != w.Tokens[ri] {
				return nil, inWrite(req, failedAt{-1, wi}, fmt.Errorf("%w: %s is fenced with %s by write %d and with %s by write %d: one resource, one token per request",
					ErrConflict, key, f.token.Unsigned(), f.write, w.Tokens[ri].Unsigned(), wi))
			}
			f.strict = f.strict || strict
		}
	}
	return req, nil
}

// coalescable reports whether req may be queued behind the write in flight
// of its resource: a lone write of one resource that coalesces.
// Requests of several fences run alone: queueing them on every resource
// would tie those resources' batches together.
func (req *Request) coalescable() bool {
	return len(req.Writes) == 1 && len(req.fences) == 1 && req.Writes[0].Operation.Roles[0].Kind.Coalesce
}

// groupCommits reports whether req, a coalescable request, may share a
// transaction with other resources' units: its resource's setting, else
// the store's.
func (req *Request) groupCommits(byDefault bool) bool {
	if g := req.Writes[0].Operation.Roles[0].Kind.GroupCommit; g != nil {
		return *g
	}
	return byDefault
}

// Resources lists the resources req is fenced on, in canonical order.
func (req *Request) Resources() []string {
	out := make([]string, len(req.fences))
	for i, f := range req.fences {
		out[i] = f.resource
	}
	return out
}

// Result is what one applied write returns: per statement of its
// operation, the rows affected and, for statements with RETURNING or
// SELECT, the rows as PostgreSQL rendered them (a JSON array).
type Result struct {
	Statements []StatementResult
}

// StatementResult is the outcome of one statement of an operation.
type StatementResult struct {
	RowsAffected int64
	Rows         []byte
}

// Response is what a request is answered with: its rendered results, or a
// refusal stored as its key's outcome.
type Response struct {
	// Status is the code the body is answered with: StatusApplied for
	// an applied request's answer (answer.go), otherwise the one the
	// caller rendered and stored with it (the gateway's HTTP statuses).
	Status int
	Body   []byte
	// Replayed: the answer of an earlier attempt with the request's key,
	// not of this one.
	Replayed bool
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"github.com/fencegw/fencegw/fence"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// Amount is what every write adds to its account's balance, so the sum of
// balances counts the committed writes.
const Amount = 1

// workload is the operation every write calls, with where its arguments go.
type workload struct {
	op               *policy.Operation
	idArg, amountArg int // indexes into op.Args
}

// newWorkload finds operation name in pol with the arguments id and amount.
func newWorkload(pol *policy.Policy, name string) (workload, error) {
	op, ok := pol.Operations[name]
	if !ok {
		return workload{}, fmt.Errorf("bench: the policy %s has no operation %q", pol.Source, name)
	}
	w := workload{op: op, idArg: -1, amountArg: -1}
	for i, a := range op.Args {
		switch a.Name {
		case "id":
			w.idArg = i
		case "amount":
			w.amountArg = i
		}
	}
	if w.idArg < 0 || w.amountArg < 0 || len(op.Args) != 2 {
		return workload{}, fmt.Errorf("bench: operation %q must take exactly the arguments id and amount", name)
	}
	return w, nil
}

// args returns the decoded arguments of a write to account id, as the
// gateway would have decoded them from {"id": id, "amount": Amount}.
func (w workload) args(id int64) policy.Values {
	vals := make(policy.Values, 2)
	vals[w.idArg], vals[w.amountArg] = id, int64(Amount)
	return vals
}

// directWriter is the reference path: the gateway's own fenced
// transaction (package fence), so the SQL, the batch and the single round
// trip are exactly the gateway's, minus HTTP, JSON and token validation.
// Direct writes are not coalesced: they stand for a service that writes
// one write, one commit.
func directWriter(store *fence.Store, w workload, tok tokens.Token) writeFunc {
	toks := []tokens.Token{tok}
	return func(ctx context.Context, id int64) (string, string) { return directWrite(ctx, store, w, toks, id) }
}

// directWrite is one write of the reference path: w's operation on
// account id, fenced with toks (its one role's).
func directWrite(ctx context.Context, store *fence.Store, w workload, toks []tokens.Token, id int64) (kind, detail string) {
	args := w.args(id)
	keys, err := w.op.Resources(nil, args)
	var req *fence.Request
	if err == nil {
		req, err = fence.NewRequest([]fence.Write{{Operation: w.op, Args: args, Resources: keys, Tokens: toks}}, nil)
	}
	if err == nil {
		_, err = store.Apply(ctx, req)
	}
	if err == nil {
		return "", ""
	}
	return directKind(err), err.Error()
}

// newDirectStore is the store of the reference path on pool.
func newDirectStore(pool *pgxpool.Pool) (*fence.Store, error) {
	return fence.New(fence.Config{Pool: pool, NoCoalescing: true})
}

// directKind names a direct write's error like the gateway's problem type
// for the same error would.
func directKind(err error) string {
	var stale *fence.StaleTokenError
	switch {
	case errors.As(err, &stale):
		return "stale-token"
	case errors.Is(err, fence.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, fence.ErrValue), errors.Is(err, policy.ErrBadArgs):
		return "bad-request"
	}
	return "error"
}

package gateway

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"time"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// MaxBatchWrites bounds the writes of one POST /v1/batch: they hold their
// fence rows for the whole transaction.
const MaxBatchWrites = 100

// handleBatch serves POST /v1/batch: several writes in one transaction,
// all or nothing. Fences advance in canonical order, once per resource.
func (g *Gateway) handleBatch(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	c := callOf(r.Context())
	resp, err := g.write(r, c) // as a lone write's, its request made by prepareBatch
	g.answer(w, r, policy.BatchName, start, resp, err, c.scope)
}

// prepareBatch reads a batch of POST /v1/batch into its request.
func (g *Gateway) prepareBatch(r *http.Request) *call {
	c := &call{scope: problemScope{Operation: policy.BatchName}}
	c.req, c.err = g.batchRequest(r, &c.scope)
	return c
}

func (g *Gateway) batchRequest(r *http.Request, scope *problemScope) (*fence.Request, error) {
	if err := requireJSON(r); err != nil {
		return nil, err
	}
	key, once, err := idempotencyKey(r)
	if err != nil {
		return nil, err
	}
	deadline, err := notAfter(r)
	if err != nil {
		return nil, err
	}
	body, err := g.readBody(r)
	if err != nil {
		return nil, err
	}
	items, err := policy.DecodeBatch(body, MaxBatchWrites)
	if err != nil {
		return nil, err
	}
	writes := make([]fence.Write, len(items))
	h := sha256.New()
	for i, item := range items {
		if writes[i], err = g.batchWrite(r.Context(), item); err != nil {
			return nil, &fence.WriteError{Index: i, Operation: item.Operation, Err: err}
		}
		fp := writes[i].Operation.Fingerprint(writes[i].Args)
		h.Write(fp[:])
	}
	var k *fence.IdempotencyKey
	if once {
		scope.Keyed = true
		k = &fence.IdempotencyKey{Client: clientName(r.Context()), Scope: policy.BatchName, Value: key, Retention: g.retention}
		h.Sum(k.Fingerprint[:0])
	}
	req, err := fence.NewBatch(writes, k)
	if err != nil {
		return nil, err
	}
	req.NotAfter = deadline
	return req, nil
}

// batchWrite checks one write of a batch as POST /v1/ops would.
func (g *Gateway) batchWrite(ctx context.Context, item policy.BatchItem) (fence.Write, error) {
	op, ok := g.cfg.Policy.Operations[item.Operation]
	switch {
	case !ok:
		return fence.Write{}, fmt.Errorf("%w: %q is not in the policy", ErrUnknownOperation, clip.String(item.Operation, 64))
	case op.Read:
		return fence.Write{}, fmt.Errorf("%w: %s is a read: a batch takes writes (POST /v1/reads/%s)", ErrUnknownOperation, op.Name, op.Name)
	}
	if err := authorize(ctx, op.Name); err != nil {
		return fence.Write{}, err
	}
	f := tokenField{batch: true}
	if item.RoleTokens == nil {
		tok, err := tokens.Parse(item.Token)
		if err != nil {
			return fence.Write{}, err
		}
		f.single = tok
	}
	for _, rt := range item.RoleTokens {
		tok, err := tokens.Parse(rt.Token)
		if err != nil {
			return fence.Write{}, fmt.Errorf("role %q: %w", clip.String(rt.Role, 64), err)
		}
		f.roles = append(f.roles, roleToken{role: rt.Role, tok: tok})
	}
	toks, err := tokensFor(nil, op, f)
	if err != nil {
		return fence.Write{}, err
	}
	return decodeWrite(op, item.Args, toks, nil)
}

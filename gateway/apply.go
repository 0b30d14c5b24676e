package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/tokens"
)

// apply validates every token of req with the authority, applies req and,
// if it is keyed and failed, settles its key's outcome.
func (g *Gateway) apply(ctx context.Context, req *fence.Request, scope *problemScope) (fence.Response, error) {
	resp, err := g.validateAndApply(ctx, req, scope)
	if err != nil && req.Key != nil {
		return g.settle(ctx, req.Key, err, *scope)
	}
	return resp, err
}

func (g *Gateway) validateAndApply(ctx context.Context, req *fence.Request, scope *problemScope) (fence.Response, error) {
	client := clientName(ctx)
	for wi := range req.Writes {
		w := &req.Writes[wi]
		for i, role := range w.Operation.Roles {
			if err := g.validate(ctx, w.Keys[i], client, w.Tokens[i], role.Resource.Validation); err != nil {
				scope.Resource, scope.Role, scope.Presented = w.Keys[i], role.Name, w.Tokens[i].Unsigned()
				return fence.Response{}, req.InWrite(wi, err)
			}
		}
	}
	return g.store.Apply(ctx, req)
}

// validate asks the authority about one token presented by client.
func (g *Gateway) validate(ctx context.Context, resource, client string, tok tokens.Token, mode tokens.Validation) error {
	err := g.cfg.Authority.Validate(ctx, resource, client, tok, mode)
	if err != nil && tok.Epoch > g.cfg.Authority.Epoch() && errors.Is(err, tokens.ErrRejected) && g.guard.Recheck(ctx) {
		// A lease taken after `fencegw epoch bump` carries the new epoch
		// before this gateway's guard has seen it: look now, then ask again.
		err = g.cfg.Authority.Validate(ctx, resource, client, tok, mode)
	}
	return err
}

// settledProblems are the refusals of a keyed request that become the
// outcome of its key (see fence.Store.Settle): each says "not applied" as
// if for good, so no other attempt with the key may apply afterwards.
var settledProblems = map[string]bool{"token-rejected": true, "stale-token": true, "precondition-failed": true, "constraint": true}

// settle answers a keyed request that failed. A final refusal is stored
// as its key's outcome, after any attempt in flight with the key has
// ended; if that attempt (or an earlier one) completed, its answer is
// replayed instead, whoever asks: retrying a completed write is harmless.
// A halted authority is not final: settle waits for an attempt in flight
// and replays it, or says the outcome is unknown, since an earlier attempt
// may still be on its way. Every other failure is answered as it is.
func (g *Gateway) settle(ctx context.Context, key *fence.Key, err error, scope problemScope) (fence.Response, error) {
	var rejected *tokens.RejectedError
	if errors.As(err, &rejected) && !rejected.Issued {
		// A token the authority never issued: no attempt with it can have
		// passed, so the refusal is final as it is. Storing it would let
		// anyone who guesses a key spoil it for its owner.
		return fence.Response{}, err
	}
	var refusal *fence.Response
	if p := problemFor(err, scope); settledProblems[p.Kind()] {
		// The bytes this request answers (writeProblem names the same
		// instance) and every replay of the key answers.
		p.Instance = instanceOf(ctx)
		refusal = &fence.Response{Status: p.Status, Body: renderProblem(p)}
	} else if !errors.Is(err, tokens.ErrHalted) {
		return fence.Response{}, err
	}
	resp, ok, serr := g.store.Settle(ctx, key, refusal)
	switch {
	case serr != nil:
		return fence.Response{}, serr
	case ok && resp.Replayed:
		return resp, nil
	case refusal == nil:
		return fence.Response{}, fmt.Errorf("%w (%w)", err, fence.ErrOutcomeUnknown)
	}
	return fence.Response{}, err // stored as the key's outcome: answered like any refusal
}

package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/outcome"
	"github.com/fencegw/fencegw/tokens"
)

// apply validates every token of c's request with the authority, applies
// it and, if it is keyed and failed (or was refused before its turn, for
// a signature: c.err), settles its key's outcome.
func (g *Gateway) apply(ctx context.Context, c *call) (fence.Response, error) {
	req, err := c.req, c.err
	var resp fence.Response
	if err == nil {
		resp, err = g.validateAndApply(ctx, req, &c.scope)
	}
	if err != nil && req.IdempotencyKey != nil {
		// Settling is PostgreSQL's work: with a turn, given back by a
		// wait during validation or not.
		if terr := c.turn.Take(ctx); terr != nil {
			return fence.Response{}, fmt.Errorf("%w (%w)", terr, fence.ErrKeyInFlight)
		}
		return g.settle(ctx, req.IdempotencyKey, err, c.scope)
	}
	return resp, err
}

func (g *Gateway) validateAndApply(ctx context.Context, req *fence.Request, scope *problemScope) (fence.Response, error) {
	if err := g.validateAll(ctx, req, scope); err != nil {
		return fence.Response{}, err
	}
	return g.store.Apply(ctx, req)
}

// validateAll asks the authority about every token of req, each under its
// resource kind's validation, and names the first it refuses in scope.
func (g *Gateway) validateAll(ctx context.Context, req *fence.Request, scope *problemScope) error {
	return eachToken(ctx, req, scope, g.validate)
}

// checkSignatures decides every token's signature of req, as the
// authority's validation does first (Authority.CheckSignature), and names
// the first it refuses in scope. The gate asks it before a call takes its
// turn (admitCalls): a forged token is refused without one, and one signed
// by a key this replica has not loaded yet waits for the keys' reload
// without one.
func (g *Gateway) checkSignatures(ctx context.Context, req *fence.Request, scope *problemScope) error {
	return eachToken(ctx, req, scope, g.cfg.Authority.CheckSignature)
}

// eachToken asks check about every token of req, presented by the
// caller's client for its role's resource under its resource kind's
// validation, and names the first it refuses in scope.
func eachToken(ctx context.Context, req *fence.Request, scope *problemScope, check func(ctx context.Context, resource, client string, tok tokens.Token, mode tokens.Validation) error) error {
	client := clientName(ctx)
	for wi := range req.Writes {
		w := &req.Writes[wi]
		for i, role := range w.Operation.Roles {
			if err := check(ctx, w.Resources[i], client, w.Tokens[i], role.Kind.Validation); err != nil {
				scope.Resource, scope.Role, scope.Presented = w.Resources[i], role.Name, w.Tokens[i].Unsigned()
				return req.InWrite(wi, err)
			}
		}
	}
	return nil
}

// validate asks the authority about one token presented by client. Where
// the answer may wait on etcd (Authority.Waits: a token above the newest
// revision this replica has seen, an epoch not its own, a key reloaded
// since the gate checked the signature), the call's admission turn is
// given back for the wait and taken again for what follows: a wait of its
// own keeps no other write out.
func (g *Gateway) validate(ctx context.Context, resource, client string, tok tokens.Token, mode tokens.Validation) error {
	t := turnOf(ctx)
	if t == nil || !g.cfg.Authority.Waits(resource, client, tok, mode) {
		return g.validateNow(ctx, resource, client, tok, mode)
	}
	t.Release()
	if err := g.validateNow(ctx, resource, client, tok, mode); err != nil {
		return err
	}
	return t.Take(ctx)
}

// validateNow is validate, its turn left as it is.
func (g *Gateway) validateNow(ctx context.Context, resource, client string, tok tokens.Token, mode tokens.Validation) error {
	err := g.cfg.Authority.Validate(ctx, resource, client, tok, mode)
	var rejected *tokens.RejectedError
	if errors.As(err, &rejected) && rejected.Issued && tok.Epoch > g.cfg.Authority.Epoch() && g.cfg.Node.Recheck(ctx) {
		// A lease taken after `fencegw epoch bump` carries the new epoch
		// before this gateway's watchdog has seen it: look now, then ask
		// again. An epoch etcd does not have is a forgery (not Issued),
		// and buys no recheck.
		err = g.cfg.Authority.Validate(ctx, resource, client, tok, mode)
	}
	return err
}

// settle answers a keyed request that failed. A refusal that settles its
// key (outcome.SettlesKey) is stored as the key's outcome, after any attempt
// in flight with the key has ended; if that attempt (or an earlier one)
// completed, its answer is replayed instead, whoever asks: retrying a
// completed write is harmless. A token the authority does not know it
// issued (a forgery, or one of a key deleted outright) settles nothing,
// since storing that refusal would let whoever guesses a key spoil it;
// but the key's stored answer, if it has one, is still replayed, as it is
// for every refusal of the authority: a write applied before its key was
// retired or its epoch bumped stays applied, and its retry must say so. An
// attempt that was not applied for a reason that may pass (PostgreSQL or
// etcd unavailable, a lock wait run out, a halted authority) settles
// nothing: settle waits for an attempt in flight and replays it, or says
// the key's outcome is unknown, since an earlier attempt may still be on
// its way (queued in this replica or another). Every other failure is
// answered as it is. Which of these an error is, the error itself
// declares (outcome.Of, outcome.SettlesKey); the gateway only renders the
// refusal's problem document, the bytes every replay of the key answers,
// for fence to store: HTTP is the gateway's, the decision the error's.
func (g *Gateway) settle(ctx context.Context, key *fence.IdempotencyKey, err error, scope problemScope) (fence.Response, error) {
	var (
		refusal   *fence.Response
		finalAsIs bool // with nothing stored, err is answered as it is
		rejected  *tokens.RejectedError
	)
	switch o := outcome.Of(err); {
	case o == outcome.Refused && outcome.SettlesKey(err):
		// The bytes this request answers (writeProblem names the same
		// instance) and every replay of the key answers.
		p := problemFor(g.mapSQLError(err), scope)
		p.Instance = instanceOf(ctx)
		refusal = &fence.Response{Status: p.Status, Body: renderProblem(p)}
	case errors.As(err, &rejected):
		finalAsIs = true
	case o == outcome.NotApplied && !unmappedSQLError(err):
	default:
		return fence.Response{}, err
	}
	resp, ok, serr := g.store.Settle(ctx, key, refusal)
	switch {
	case serr != nil:
		return fence.Response{}, serr
	case ok && resp.Replayed:
		return resp, nil
	case refusal == nil && !finalAsIs:
		return fence.Response{}, fmt.Errorf("%w (%w)", err, fence.ErrKeyInFlight)
	}
	return fence.Response{}, err // stored as the key's outcome, or not to be: answered like any refusal
}

// unmappedSQLError reports whether err is an SQLSTATE of the policy's
// statements that the policy does not map: answered as an internal error,
// which promises nothing about the write and is left as it is.
func unmappedSQLError(err error) bool {
	var se *fence.SQLError
	return errors.As(err, &se) && !se.Mapped
}

package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/tokens"
)

// jsonContentType is shared by every answer: net/http only reads header
// values, and Header.Set would allocate a slice per request.
var (
	jsonContentType    = []string{"application/json"}
	problemContentType = []string{"application/problem+json"}
)

// TokenHeader carries the fencing token of a write, text form E:R.
const TokenHeader = "Fencing-Token"

// handleWrite serves POST /v1/ops/{operation}: parse, derive the resource,
// ask the authority, then fence and write in one transaction.
func (g *Gateway) handleWrite(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	name := chi.URLParam(r, "operation")
	scope := problemScope{Operation: name}
	reply, err := g.write(r, &scope)
	outcome := "ok"
	switch {
	case err != nil:
		p := g.writeProblem(w, r, err, scope)
		outcome = p.Kind()
		g.audit(r.Context(), p)
	default:
		w.Header()["Content-Type"] = jsonContentType
		if reply.Status != http.StatusOK {
			w.Header()["Content-Type"] = problemContentType // a refusal stored as its key's outcome
		}
		if reply.Replayed {
			w.Header().Set(ReplayedHeader, "true")
			outcome = "replayed"
		}
		w.WriteHeader(reply.Status)
		_, _ = w.Write(reply.Body)
	}
	if m, known := g.metrics.ops[name]; known { // unknown names would grow the label set without bound
		if outcome == "ok" {
			m.ok.Inc()
		} else {
			g.metrics.writes.WithLabelValues(name, outcome).Inc()
		}
		m.latency.Observe(time.Since(start).Seconds())
	}
}

func (g *Gateway) write(r *http.Request, scope *problemScope) (Reply, error) {
	op, ok := g.cfg.Policy.Operations[scope.Operation]
	if !ok {
		return Reply{}, fmt.Errorf("%w: %q is not in the policy", ErrUnknownOperation, clip.String(scope.Operation, 64))
	}
	if err := authorize(r.Context(), op.Name); err != nil {
		return Reply{}, err
	}
	tok, err := tokenFrom(r)
	if err != nil {
		return Reply{}, err
	}
	scope.Presented = tok
	key, once, err := idempotencyKey(r)
	if err != nil {
		return Reply{}, err
	}
	body, err := g.readBody(r)
	if err != nil {
		return Reply{}, err
	}
	args, err := op.DecodeArgs(body)
	if err != nil {
		return Reply{}, err
	}
	resource, err := op.ResourceKey(args)
	if err != nil {
		return Reply{}, err
	}
	scope.Resource = resource

	// From here on the write runs to completion or its own deadline, not
	// the client's: a disconnect must not leave its outcome to chance.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), g.writeTTL)
	defer cancel()
	wr := Write{Operation: op, Args: args, Resource: resource, Token: tok}
	var idem *Idempotency // nil without an Idempotency-Key
	if once {
		idem = &Idempotency{Client: clientName(r.Context()), Key: key, Fingerprint: op.Fingerprint(args), Retention: g.retention}
	}
	reply, err := g.validateAndApply(ctx, wr, idem)
	if err != nil && idem != nil {
		return g.settle(ctx, op.Name, *idem, err, *scope)
	}
	return reply, err
}

// validateAndApply asks the authority about w's token, then applies w.
func (g *Gateway) validateAndApply(ctx context.Context, w Write, idem *Idempotency) (Reply, error) {
	res := w.Operation.Resource
	err := g.cfg.Authority.Validate(ctx, w.Resource, w.Token, res.Validation)
	if err != nil && w.Token.Epoch > g.cfg.Authority.Epoch() && errors.Is(err, tokens.ErrRejected) && g.recheckAuthority(ctx) {
		// A lease taken after `fencegw epoch bump` carries the new epoch
		// before this gateway's guard has seen it: look now, then ask again.
		err = g.cfg.Authority.Validate(ctx, w.Resource, w.Token, res.Validation)
	}
	if err != nil {
		return Reply{}, err
	}
	if res.Coalesce {
		return g.coal.Execute(ctx, w, idem)
	}
	return g.exec.apply(ctx, w, idem)
}

// settledProblems are the refusals of a keyed write that become the
// outcome of its key (see Executor.Settle): each says "not applied" as if
// for good, so no other attempt with the key may apply afterwards.
var settledProblems = map[string]bool{"token-rejected": true, "stale-token": true, "precondition-failed": true, "constraint": true}

// settle answers a keyed write that failed. A final refusal is stored as
// its key's outcome, after any attempt in flight with the key has ended;
// if that attempt (or an earlier one) completed, its answer is replayed
// instead, whoever asks: retrying a completed write is harmless. A halted
// authority is not final: settle waits for an attempt in flight and
// replays it, or says the outcome is unknown, since an earlier attempt
// may still be on its way. Every other failure is answered as it is.
func (g *Gateway) settle(ctx context.Context, op string, idem Idempotency, err error, scope problemScope) (Reply, error) {
	var refusal *Reply
	if p := problemFor(err, scope); settledProblems[p.Kind()] {
		refusal = &Reply{Status: p.Status, Body: renderProblem(p)}
	} else if !errors.Is(err, tokens.ErrHalted) {
		return Reply{}, err
	}
	reply, ok, serr := g.exec.Settle(ctx, op, idem, refusal)
	switch {
	case serr != nil:
		return Reply{}, serr
	case ok && reply.Replayed:
		return reply, nil
	case refusal == nil:
		return Reply{}, fmt.Errorf("%w (%w)", err, ErrOutcomeUnknown)
	}
	return Reply{}, err // stored as the key's outcome: answered like any refusal
}

// tokenFrom reads the one Fencing-Token header of r.
func tokenFrom(r *http.Request) (tokens.Token, error) {
	values := r.Header.Values(TokenHeader)
	switch len(values) {
	case 0:
		return tokens.Token{}, fmt.Errorf("%w: send the token of your lease as %s: E:R", ErrTokenRequired, TokenHeader)
	case 1:
		return tokens.Parse(values[0])
	}
	return tokens.Token{}, badRequest("%d %s headers: send exactly one", len(values), TokenHeader)
}

// initialBodyBuffer bounds what a request may make the gateway allocate
// before its body arrives; real writes are far smaller.
const initialBodyBuffer = 16 << 10

// readBody reads at most maxBody bytes of r's body, in one allocation when
// the client sent a Content-Length (every HTTP client does for a small
// body); io.ReadAll would grow its buffer from 512 bytes.
func (g *Gateway) readBody(r *http.Request) ([]byte, error) {
	tooLarge := func() error { return fmt.Errorf("%w: at most %d bytes", ErrBodyTooLarge, g.maxBody) }
	if r.ContentLength > g.maxBody {
		return nil, tooLarge()
	}
	size := 512
	if r.ContentLength >= 0 {
		// + 1: room to see the end without growing. Capped: the length
		// is the client's word, and the bytes may never come.
		size = int(min(r.ContentLength+1, initialBodyBuffer))
	}
	body := make([]byte, 0, size)
	for {
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)]
		}
		n, err := r.Body.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if int64(len(body)) > g.maxBody {
			return nil, tooLarge()
		}
		switch {
		case err == io.EOF:
			return body, nil
		case err != nil:
			return nil, badRequest("reading the body: %v", err)
		}
	}
}

package gateway

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/internal/timeout"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// handleWrite serves POST /v1/ops/{operation}: parse, derive the
// resources and check the tokens' signatures (prepareWrite, before the
// gate), then ask the authority, fence and write in one transaction.
func (g *Gateway) handleWrite(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	c := callOf(r.Context())
	resp, err := g.write(r, c)
	g.answer(w, r, c.scope.Operation, start, resp, err, c.scope)
}

// prepareWrite reads a write of POST /v1/ops into its request.
func (g *Gateway) prepareWrite(r *http.Request) *call {
	c := &call{scope: problemScope{Operation: chi.URLParam(r, "operation")}}
	c.req, c.err = g.writeRequest(r, c)
	return c
}

func (g *Gateway) writeRequest(r *http.Request, c *call) (*fence.Request, error) {
	op, err := g.readCall(r, &c.scope, &c.lone, false)
	if err != nil {
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
	wr := &c.lone.w[0]
	var k *fence.IdempotencyKey
	if once {
		k = &fence.IdempotencyKey{Client: clientName(r.Context()), Scope: op.Name, Value: key, Fingerprint: op.Fingerprint(wr.Args), Retention: g.retention}
		c.scope.Keyed = true
	}
	req, err := fence.NewRequest(c.lone.w[:], k)
	if err != nil {
		return nil, err
	}
	req.NotAfter = deadline
	return req, nil
}

func (g *Gateway) write(r *http.Request, c *call) (fence.Response, error) {
	if c.err != nil && !c.settles() {
		return fence.Response{}, c.err
	}
	// From here on the write runs to completion or its own deadline, not
	// the client's: a disconnect must not leave its outcome to chance.
	g.writeDeadlines.Bind(&c.lone.ctx, r.Context())
	return g.apply(&c.lone.ctx, c)
}

// readCall reads a call of the operation r names into lone.w[0]: the
// operation, the client's right to call it, its tokens and arguments, and
// the resource of each of its roles. read says which kind of operation
// the endpoint serves; the other kind is named as such.
func (g *Gateway) readCall(r *http.Request, scope *problemScope, lone *loneWrite, read bool) (*policy.Operation, error) {
	op, ok := g.cfg.Policy.Operations[scope.Operation]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %q is not in the policy", ErrUnknownOperation, clip.String(scope.Operation, 64))
	case op.Read && !read:
		return nil, fmt.Errorf("%w: %s is a read: POST /v1/reads/%s", ErrUnknownOperation, op.Name, op.Name)
	case !op.Read && read:
		return nil, fmt.Errorf("%w: %s is a write: POST /v1/ops/%s", ErrUnknownOperation, op.Name, op.Name)
	}
	if err := authorize(r.Context(), op.Name); err != nil {
		return nil, err
	}
	field, sent, err := readTokenField(r)
	switch {
	case err != nil:
		return nil, err
	case !sent:
		return nil, errNoToken(op)
	}
	toks, err := tokensFor(lone.toks[:], op, field)
	if err != nil {
		return nil, err
	}
	if !op.Named() {
		scope.Presented = toks[0].Unsigned()
	}
	body, err := g.readBody(r)
	if err != nil {
		return nil, err
	}
	lone.w[0], err = decodeWrite(op, body, toks, lone.resources[:0])
	if err != nil {
		return nil, err
	}
	if !op.Named() {
		scope.Resource = lone.w[0].Resources[0]
	}
	return op, nil
}

// loneWrite holds what a write of POST /v1/ops needs beyond its arguments,
// in one allocation: this runs on every write.
type loneWrite struct {
	w         [1]fence.Write
	resources [1]string
	toks      [1]tokens.Token
	ctx       timeout.Context // the write's: the request's values, the write's deadline
}

// decodeWrite decodes op's arguments from body and derives the resource
// of each of its roles (a semaphore's: its permit slot's), into resources'
// storage when it has room.
func decodeWrite(op *policy.Operation, body []byte, toks []tokens.Token, resources []string) (fence.Write, error) {
	args, err := op.DecodeArgs(body)
	if err != nil {
		return fence.Write{}, err
	}
	resources, err = op.Resources(resources, args)
	if err != nil {
		return fence.Write{}, err
	}
	if err := permitResources(op, resources, toks); err != nil {
		return fence.Write{}, err
	}
	return fence.Write{Operation: op, Args: args, Resources: resources, Tokens: toks}, nil
}

// answer sends a write's (or a batch's) response or problem, and counts
// and times it under the operation's name. An accepted write's answer is
// flushed before the handler returns: the access log line (a write to
// stderr in production) and net/http's own work after a handler then come
// after the client has its answer, not before. The count and the time come
// first, so that an answered write is already counted.
func (g *Gateway) answer(w http.ResponseWriter, r *http.Request, name string, start time.Time, resp fence.Response, err error, scope problemScope) {
	if err != nil {
		p := g.writeProblem(w, r, err, scope)
		g.count(name, p.Kind(), start)
		g.audit(r.Context(), p)
		return
	}
	outcome := "ok"
	h := w.Header()
	h["Content-Type"] = jsonContentType
	if resp.Status != fence.StatusApplied {
		h["Content-Type"] = problemContentType // a refusal stored as its key's outcome
	}
	if resp.Replayed {
		h.Set(ReplayedHeader, "true")
		outcome = "replayed"
	}
	e := accessOf(r.Context())
	e.operation, e.resource, e.outcome = name, scope.Resource, outcome
	e.presented = scope.Presented
	g.count(name, outcome, start)
	// With its length known, the flush sends the answer as it is, not
	// in chunks.
	e.contentLength[0] = strconv.Itoa(len(resp.Body))
	h["Content-Length"] = e.contentLength[:]
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
	_ = http.NewResponseController(w).Flush()
}

// count counts a write (or a batch) of operation name by its outcome and
// times it from start.
func (g *Gateway) count(name, outcome string, start time.Time) {
	m, known := g.metrics.ops[name]
	if !known { // unknown names would grow the label set without bound
		return
	}
	if outcome == "ok" {
		m.ok.Inc()
	} else {
		g.metrics.writes.WithLabelValues(name, outcome).Inc()
	}
	m.latency.Observe(time.Since(start).Seconds())
}

// jsonContentType is shared by every answer: net/http only reads header
// values, and Header.Set would allocate a slice per request.
var (
	jsonContentType    = []string{"application/json"}
	problemContentType = []string{"application/problem+json"}
)

package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/tokens"
)

// ReadResult is the JSON answer of a read: as a write's Result, with the
// fence each token was held to as the read saw it.
type ReadResult struct {
	Operation  string            `json:"operation"`
	Resource   string            `json:"resource,omitempty"`
	Token      tokens.Token      `json:"token,omitzero"`
	Fence      *FenceSeen        `json:"fence,omitempty"` // nil for an operation with roles: Fences has theirs
	Fences     []ReadFence       `json:"fences,omitempty"`
	Statements []StatementResult `json:"statements"`
}

// ReadFence is one role's token and fence in a ReadResult or a check.
type ReadFence struct {
	Role     string       `json:"role,omitempty"`
	Resource string       `json:"resource"`
	Token    tokens.Token `json:"token"`
	Fence    FenceSeen    `json:"fence"`
}

// FenceSeen is the fence a read or a check held a token to: in JSON the
// token, or null for a resource without a fence row (never written, or
// its row pruned), whose token was held to the fence floor. null and not
// an absent key, so that every answer has the same fields.
type FenceSeen tokens.Token

// MarshalJSON writes the fence, or null.
func (f FenceSeen) MarshalJSON() ([]byte, error) {
	if tokens.Token(f).IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(tokens.Token(f))
}

// fenceSeen is what res says of resource's fence.
func fenceSeen(res fence.ReadResult, resource string) FenceSeen {
	f, _ := res.Fence(resource)
	return FenceSeen(f)
}

// handleRead serves POST /v1/reads/{operation}: a policy operation of kind
// read, with the same body and Fencing-Token header as a write, run under
// the fence without advancing it (fence.Store.Read). A token older than
// its fence is 409 stale-token, as for a write: the holder learns at read
// time that a successor has written.
func (g *Gateway) handleRead(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	c := callOf(r.Context())
	name := c.scope.Operation
	res, err := g.read(r, c)
	if err != nil {
		p := g.writeProblem(w, r, err, c.scope)
		g.countRead(name, p.Kind(), start)
		return
	}
	e := accessOf(r.Context())
	e.operation, e.resource, e.outcome = name, c.scope.Resource, "ok"
	e.presented = c.scope.Presented
	g.countRead(name, "ok", start)
	writeJSON(w, http.StatusOK, res)
}

// prepareRead reads a read of POST /v1/reads into its request.
func (g *Gateway) prepareRead(r *http.Request) *call {
	c := &call{scope: problemScope{Operation: chi.URLParam(r, "operation")}}
	if _, c.err = g.readCall(r, &c.scope, &c.lone, true); c.err == nil {
		c.req, c.err = fence.NewRequest(c.lone.w[:], nil)
	}
	return c
}

func (g *Gateway) read(r *http.Request, c *call) (ReadResult, error) {
	if c.err != nil {
		return ReadResult{}, c.err
	}
	req := c.req
	op := req.Writes[0].Operation
	ctx, cancel := context.WithTimeout(r.Context(), g.writeTTL)
	defer cancel()
	if err := g.validateAll(ctx, req, &c.scope); err != nil {
		return ReadResult{}, err
	}
	res, err := g.store.Read(ctx, req)
	if err != nil {
		return ReadResult{}, err
	}
	wr := &req.Writes[0]
	out := ReadResult{Operation: op.Name, Statements: statementResults(res.Results[0])}
	if !op.Named() {
		f := fenceSeen(res, wr.Resources[0])
		out.Resource, out.Token, out.Fence = wr.Resources[0], wr.Tokens[0].Unsigned(), &f
		return out, nil
	}
	for i, role := range op.Roles {
		out.Fences = append(out.Fences, ReadFence{Role: role.Name, Resource: wr.Resources[i], Token: wr.Tokens[i].Unsigned(), Fence: fenceSeen(res, wr.Resources[i])})
	}
	return out, nil
}

// statementResults is one write's results as the API shows them.
func statementResults(res fence.Result) []StatementResult {
	out := make([]StatementResult, len(res.Statements))
	for i, st := range res.Statements {
		out[i] = StatementResult{RowsAffected: st.RowsAffected}
		if len(st.Rows) > 0 {
			out[i].Rows = json.RawMessage(st.Rows)
		}
	}
	return out
}

// countRead counts a read of operation name by its outcome, apart from
// the writes.
func (g *Gateway) countRead(name, outcome string, start time.Time) {
	if op, known := g.cfg.Policy.Operations[name]; (!known || !op.Read) && name != checkOperation { // unknown names would grow the label set without bound
		name = "(unknown)"
	}
	g.metrics.reads.WithLabelValues(name, outcome).Inc()
	g.metrics.readLatency.Observe(time.Since(start).Seconds())
}

package gateway

import (
	"context"
	"net/http"
	"time"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/policy"
)

// checkOperation names checks in metrics and problems.
const checkOperation = "check"

// CheckResult is the answer of POST /v1/fences/check: every token current.
type CheckResult struct {
	Fences []ReadFence `json:"fences"`
}

// handleCheck serves POST /v1/fences/check: is my token still current?
// The tokens of the Fencing-Token header, one per resource of the body,
// are validated as a write's would be (the resource kind's validation) and
// held to their fences in a read-only transaction, without advancing them:
// 200 when every one is current, 409 stale-token naming the first that is
// not. Nothing is written either way.
func (g *Gateway) handleCheck(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	c := callOf(r.Context())
	res, err := g.check(r, c)
	if err != nil {
		p := g.writeProblem(w, r, err, c.scope)
		g.countRead(checkOperation, p.Kind(), start)
		return
	}
	e := accessOf(r.Context())
	e.operation, e.resource, e.outcome = checkOperation, c.scope.Resource, "ok"
	g.countRead(checkOperation, "ok", start)
	writeJSON(w, http.StatusOK, res)
}

// prepareCheck reads a check of POST /v1/fences/check into its request.
func (g *Gateway) prepareCheck(r *http.Request) *call {
	c := &call{scope: problemScope{Operation: checkOperation}}
	c.req, c.err = g.checkRequest(r, &c.scope)
	return c
}

func (g *Gateway) checkRequest(r *http.Request, scope *problemScope) (*fence.Request, error) {
	body, err := g.readBody(r)
	if err != nil {
		return nil, err
	}
	roles, err := decodeCheckRequest(body)
	if err != nil {
		return nil, err
	}
	op, resources, err := g.checkOperation(roles)
	if err != nil {
		return nil, err
	}
	if !op.Named() {
		scope.Resource = resources[0]
	}
	field, sent, err := readTokenField(r)
	switch {
	case err != nil:
		return nil, err
	case !sent:
		return nil, errNoToken(op)
	}
	toks, err := tokensFor(nil, op, field)
	if err != nil {
		return nil, err
	}
	if err := checkedResources(g.cfg.Policy, op, resources, toks); err != nil {
		return nil, err
	}
	if !op.Named() {
		scope.Presented = toks[0].Unsigned()
	}
	return fence.NewRequest([]fence.Write{{Operation: op, Resources: resources, Tokens: toks}}, nil)
}

func (g *Gateway) check(r *http.Request, c *call) (CheckResult, error) {
	if c.err != nil {
		return CheckResult{}, c.err
	}
	req := c.req
	w := &req.Writes[0]
	op, resources, toks := w.Operation, w.Resources, w.Tokens
	ctx, cancel := context.WithTimeout(r.Context(), g.writeTTL)
	defer cancel()
	if err := g.validateAll(ctx, req, &c.scope); err != nil {
		return CheckResult{}, err
	}
	res, err := g.store.Read(ctx, req)
	if err != nil {
		return CheckResult{}, err
	}
	out := CheckResult{Fences: make([]ReadFence, len(op.Roles))}
	for i, role := range op.Roles {
		out.Fences[i] = ReadFence{Role: role.Name, Resource: resources[i], Token: toks[i].Unsigned(), Fence: fenceSeen(res, resources[i])}
	}
	return out, nil
}

// checkOperation is a read without statements over roles' resources, each
// under the policy resource kind whose key produces it: its compare mode
// and validation are a write's. roles are sorted, as an operation's are.
func (g *Gateway) checkOperation(roles []checkRole) (*policy.Operation, []string, error) {
	op := &policy.Operation{Name: checkOperation, Read: true}
	resources := make([]string, len(roles))
	for i, cr := range roles {
		kind := g.cfg.Policy.KindOf(cr.resource)
		if kind == nil {
			return nil, nil, badRequest("check: no resource of the policy is named like %q", clip.String(cr.resource, 128))
		}
		op.Roles = append(op.Roles, policy.Role{Name: cr.role, Kind: kind})
		resources[i] = cr.resource
	}
	return op, resources, nil
}

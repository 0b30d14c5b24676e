package gateway

import (
	"context"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/admission"
)

// call is a gated call (a write, a batch, a read or a check) as read
// before its turn at the admission gate (admitCalls): its request, with
// every token's signature decided, or why it is refused. The handler that
// serves it takes it from the request's context (callOf).
type call struct {
	scope problemScope
	req   *fence.Request // nil when refused before one was made
	err   error          // why it is refused
	turn  *admission.Turn
	lone  loneWrite // a lone write's or read's storage
}

type callKey struct{}

// callOf is the call ctx's request is, or nil outside a gated call.
func callOf(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// settles reports whether a refused call still needs PostgreSQL: a keyed
// request whose token was refused has its refusal stored as its key's
// outcome, or an earlier attempt's answer replayed (Gateway.settle).
func (c *call) settles() bool {
	return c.req != nil && c.req.IdempotencyKey != nil
}

package gateway

import (
	"context"

	"github.com/fencegw/fencegw/internal/admission"
)

// A gated call's turn at the admission gate rides in its request's
// context. The call gives it back while it waits on etcd (a signing
// key's reload, the read that checks a token from the future) and takes
// it again after: a wait of its own must not keep another client's
// writes out, nor a flood of forged tokens every real write (issue 34).
// A turn taken again is refused with ErrOverloaded, the call not applied.

// turnOf is the turn ctx's call holds, or nil outside a gated call.
func turnOf(ctx context.Context) *admission.Turn {
	if c := callOf(ctx); c != nil {
		return c.turn
	}
	return nil
}

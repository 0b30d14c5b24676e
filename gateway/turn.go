package gateway

import "context"

// turn is a gated call's turn at the admission gate, which it gives back
// while it waits on etcd (a signing key's reload, the read that checks a
// token from the future): a wait of its own must not keep another
// client's writes out, nor a flood of forged tokens every real write
// (issue 34). One request's goroutine uses it.
type turn struct {
	admit  *admission
	client string
	held   bool
}

// turnOf is the turn ctx's call holds, or nil outside a gated call.
func turnOf(ctx context.Context) *turn {
	if c := callOf(ctx); c != nil {
		return &c.turn
	}
	return nil
}

// release gives the turn back, if held.
func (t *turn) release() {
	if t.held {
		t.held = false
		t.admit.leave(t.client)
	}
}

// retake waits for a turn again, as the call did first; an error is
// ErrOverloaded, and the call has not been applied.
func (t *turn) retake(ctx context.Context) error {
	if t.held {
		return nil
	}
	if err := t.admit.enter(ctx, t.client); err != nil {
		return err
	}
	t.held = true
	return nil
}

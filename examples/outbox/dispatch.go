package main

import (
	"context"

	"github.com/fencegw/fencegw/examples/internal/holdpoint"
	"github.com/fencegw/fencegw/examples/internal/psp"
)

// dispatchReport is what a dispatch did.
type dispatchReport struct {
	Delivered int // messages the provider carried out and the leader recorded
	Pending   int // messages left pending: the provider refused or did not answer
}

// dispatch delivers the queue's undelivered messages, oldest first, until
// none is left: for each, a fenced read, the provider's refund, a fenced
// record. A message whose provider call failed is left pending for a
// later dispatch or the sweeper, and the next one is taken. A read or a
// record the gateway refuses ends the dispatch: a stale token means a
// newer dispatcher holds the queue, and this one must stop.
//
// With idempotent, the intent's id is the provider's idempotency key: a
// dispatcher that took over from a paused one, or the paused one when it
// wakes, asks for the same refund, not a second one. Without it (the
// control), each of them charges. The fence cannot tell the two apart:
// it refuses the paused one's record either way, after its call.
func dispatch(ctx context.Context, l leader, p *psp.Client, idempotent bool) (dispatchReport, error) {
	var rep dispatchReport
	for after := int64(0); ; {
		m, err := l.next(ctx, after)
		if err != nil || m == nil {
			return rep, err
		}
		after = m.ID
		// A test freezes the dispatcher here: it has read the row, and
		// the provider has not heard of it.
		holdpoint.Here("read")
		req := psp.Request{Reference: m.Intent, AmountCents: m.AmountCents}
		if idempotent {
			req.IdempotencyKey = m.Intent
		}
		// The call runs under ctx, not under the lease: abandoning it
		// when the lease ends would not undo a refund the provider may
		// already have made.
		ref, queried, err := p.Refund(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			l.logf("dispatch %s: message %d (intent %s): %v: left pending", l.queue, m.ID, m.Intent, err)
			rep.Pending++
			continue
		}
		l.logf("dispatch %s: message %d (intent %s, %d cents): provider refund %s (queried: %t)",
			l.queue, m.ID, m.Intent, m.AmountCents, ref.Ref, queried)
		// Or here: the provider has refunded, and nothing records it yet.
		holdpoint.Here("charged")
		if err := l.markDelivered(ctx, *m, ref.Ref, "dispatch"); err != nil {
			return rep, err
		}
		l.logf("dispatch %s: message %d delivered", l.queue, m.ID)
		rep.Delivered++
	}
}

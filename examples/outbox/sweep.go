package main

import (
	"context"
	"errors"
	"time"

	"github.com/fencegw/fencegw/examples/internal/psp"
)

// sweepReport is what a sweep did with the pending messages it found.
type sweepReport struct {
	Resolved   int // the provider had refunded: recorded as delivered
	NotCharged int // the provider has no refund: left for the dispatcher
	Unknown    int // the provider did not answer, or its refund disagrees: left pending
}

// sweep settles the queue's messages still pending olderThan after their
// request, from the provider's own record: it asks the provider what it
// did under the intent's idempotency key, and records a refund it finds.
// It never asks for a refund. A message the provider knows nothing of is
// left for the dispatcher, which asks for it under the same key; one the
// provider will not tell about is left pending, to be asked again.
//
// Without it, a message whose refund was made but not recorded (its
// dispatcher stopped between the two, or its record was refused and no
// dispatcher has run since) stays pending until the next dispatch sends
// it again: safe while the provider remembers the key, a second refund
// once it has forgotten it (providers keep keys for a while, not forever).
// The bound keeps the sweep out of the way of a dispatch in progress and
// should be well inside the provider's key retention.
func sweep(ctx context.Context, l leader, p *psp.Client, olderThan time.Duration) (sweepReport, error) {
	var rep sweepReport
	for after := int64(0); ; {
		ms, err := l.stale(ctx, olderThan, after)
		if err != nil || len(ms) == 0 {
			return rep, err
		}
		for _, m := range ms {
			after = m.ID
			ref, err := p.Lookup(ctx, m.Intent)
			switch {
			case ctx.Err() != nil:
				return rep, ctx.Err()
			case errors.Is(err, psp.ErrNoRefund):
				l.logf("sweep %s: message %d (intent %s): not charged: left for the dispatcher", l.queue, m.ID, m.Intent)
				rep.NotCharged++
				continue
			case err != nil:
				l.logf("sweep %s: message %d (intent %s): %v: left pending", l.queue, m.ID, m.Intent, err)
				rep.Unknown++
				continue
			case ref.AmountCents != m.AmountCents:
				l.logf("sweep %s: message %d (intent %s): the provider's refund %s is of %d cents, the intent of %d: left pending for a person",
					l.queue, m.ID, m.Intent, ref.Ref, ref.AmountCents, m.AmountCents)
				rep.Unknown++
				continue
			}
			if err := l.markDelivered(ctx, m, ref.Ref, "sweep"); err != nil {
				return rep, err
			}
			l.logf("sweep %s: message %d (intent %s): charged as %s: marked delivered", l.queue, m.ID, m.Intent, ref.Ref)
			rep.Resolved++
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/examples/internal/psp"
)

// Outcomes of a run that did its job.
const (
	outcomeRefunded    = "refunded"
	outcomeAlreadyDone = "already-done"
)

// releaseTimeout bounds the release of a lease after the work.
const releaseTimeout = 5 * time.Second

// intent is a refund intent as claim_refund returns it.
type intent struct {
	ID          string `json:"intent_id"`
	AmountCents int64  `json:"amount_cents"`
	Status      string `json:"status"` // pending or done
	PSPRef      string `json:"psp_ref"`
}

// refundOnce processes the refund of cfg.Intent, in the order that makes it
// happen once whoever runs it and however late: take the lock, claim the
// intent, have the provider refund under the intent's id as idempotency
// key, record the provider's answer under the fence. Any step may be the
// last one of a run; the next run resumes from the intent's state. On
// error, rep holds what the run got before it (the token, once granted).
func refundOnce(ctx context.Context, cfg config, c *client.Client, p *psp.Client) (rep report, err error) {
	rep = report{Intent: cfg.Intent}
	resource := "refund/" + cfg.Intent
	lease, err := c.Acquire(ctx, resource, client.AcquireOptions{TTL: cfg.TTL, Wait: cfg.Wait})
	if err != nil {
		return rep, err
	}
	defer release(ctx, cfg, lease)
	token := lease.Token()
	rep.Token = client.Unsigned(token) // reports and logs: the signed token is a capability
	cfg.logf("%s: lock taken, token %s", resource, client.Unsigned(token))

	// 1. Claim before the provider hears of the refund: from here on the
	// intent exists, and a worker that finds it done stops at once.
	in, err := claim(ctx, lease, cfg)
	if err != nil {
		return rep, err
	}
	if in.AmountCents != cfg.AmountCents {
		return rep, fmt.Errorf("claim %s: the intent is for %d cents, not %d", resource, in.AmountCents, cfg.AmountCents)
	}
	if in.Status == "done" {
		cfg.logf("%s: already done, provider reference %s", resource, in.PSPRef)
		rep.Outcome, rep.PSPRef = outcomeAlreadyDone, in.PSPRef
		return rep, nil
	}

	// 2. The intent's id is the provider's idempotency key, so a worker
	// that took over asks for the same refund, not a second one. The call
	// runs under ctx, not lease.Context(): abandoning it when the lease
	// ends would not undo a refund the provider may already have made.
	cfg.logf("%s: claimed (%s); asking the provider to refund %d cents", resource, in.Status, in.AmountCents)
	key := cfg.Intent
	if cfg.NoIdempotencyKey {
		key = ""
	}
	ref, queried, err := p.Refund(ctx, psp.Request{IdempotencyKey: key, Reference: cfg.Intent, AmountCents: in.AmountCents})
	rep.Queried = queried
	if err != nil {
		return rep, err
	}
	rep.PSPRef = ref.Ref
	cfg.logf("%s: provider refund %s (queried after an unanswered request: %t); recording it", resource, ref.Ref, queried)

	// 3. Record pending -> done with the token of step 1. Client.Write,
	// not lease.Write, on purpose: lease.Write refuses to send once the
	// lease is past its local deadline, but a process paused between that
	// check and the send (GC, SIGSTOP, a slow provider answer delivered
	// late) sends anyway what it prepared. That send is what this example
	// shows being refused: by the fence in PostgreSQL, the one check a
	// pause cannot slip past.
	if _, err := c.Write(ctx, token, "record_refund", map[string]any{"intent": cfg.Intent, "psp_ref": ref.Ref}); err != nil {
		return rep, err
	}
	cfg.logf("%s: recorded", resource)
	rep.Outcome = outcomeRefunded
	return rep, nil
}

// claim inserts the intent as pending unless it exists, and returns its
// state.
func claim(ctx context.Context, lease *client.Lease, cfg config) (intent, error) {
	res, err := lease.Write(ctx, "claim_refund", map[string]any{"intent": cfg.Intent, "amount_cents": cfg.AmountCents})
	if err != nil {
		return intent{}, err
	}
	var rows []intent
	if len(res.Statements) != 2 {
		return intent{}, fmt.Errorf("claim_refund: %d statement results, want 2 (is the gateway serving examples/refund/policy.yaml?)", len(res.Statements))
	}
	if err := json.Unmarshal(res.Statements[1].Rows, &rows); err != nil {
		return intent{}, fmt.Errorf("claim_refund: reading the intent's row: %w", err)
	}
	if len(rows) != 1 {
		return intent{}, fmt.Errorf("claim_refund: %d rows for the intent, want 1", len(rows))
	}
	return rows[0], nil
}

// release lets the next worker have the lock at once rather than after
// the TTL, on a context of its own: ctx may be what ended the work.
func release(ctx context.Context, cfg config, lease *client.Lease) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := lease.Release(ctx); err != nil {
		cfg.logf("%s: %v (the lease ends with its TTL)", lease.Resource(), err)
	}
}

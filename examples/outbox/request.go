package main

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegw/fencegw/client"
)

// releaseTimeout bounds the release of a lease after the work.
const releaseTimeout = 5 * time.Second

// requestConfig is a refund to request.
type requestConfig struct {
	Intent      string
	AmountCents int64
	Queue       string
	TTL, Wait   time.Duration
}

// intentState is an intent as request_refund returns it.
type intentState struct {
	Intent      string `json:"intent_id"`
	AmountCents int64  `json:"amount_cents"`
	MessageID   int64  `json:"message_id"`
	Queue       string `json:"queue"`
	Status      string `json:"status"` // pending or done
	PSPRef      string `json:"psp_ref"`
}

// request writes the refund intent and its outbox row in one transaction,
// fenced by the lock on refund/{intent}: both land or neither does, so a
// refund is decided exactly when there is a message to carry it out, and
// nothing but the queue's dispatcher calls the provider. A second request
// of the intent finds it and writes nothing; one with another amount or
// queue is refused (409 precondition-failed).
func request(ctx context.Context, c *client.Client, r requestConfig) (intentState, error) {
	lease, err := c.Acquire(ctx, "refund/"+r.Intent, client.AcquireOptions{TTL: r.TTL, Wait: r.Wait})
	if err != nil {
		return intentState{}, err
	}
	defer func() {
		// On a context of its own: ctx may be what ended the work.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		_ = lease.Release(rctx) // else the lease ends with its TTL
	}()
	res, err := lease.Write(ctx, "request_refund", map[string]any{"intent": r.Intent, "amount_cents": r.AmountCents, "queue": r.Queue})
	if err != nil {
		return intentState{}, fmt.Errorf("requesting refund %s: %w", r.Intent, err)
	}
	if len(res.Statements) != 3 {
		return intentState{}, fmt.Errorf("request_refund: %d statement results, want 3 (is the gateway serving examples/outbox/policy.yaml?)", len(res.Statements))
	}
	rows, err := rowsOf[intentState](res.Statements[2:], "request_refund")
	if err != nil {
		return intentState{}, err
	}
	if len(rows) != 1 {
		return intentState{}, fmt.Errorf("request_refund: %d rows for the intent, want 1", len(rows))
	}
	return rows[0], nil
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fencegw/fencegw/client"
)

// message is an outbox row as the leader's reads return it.
type message struct {
	ID          int64  `json:"message_id"`
	Intent      string `json:"intent_id"`
	AmountCents int64  `json:"amount_cents"`
}

// leader is the hold of a dispatcher or a sweeper on a queue: the token of
// its lock on outbox/{queue}, which every read and write of it carries.
// The token comes from `fencegw lock` (FENCING_TOKEN), so a leader holds
// no lease of its own: it never checks a deadline, and the fence alone
// decides whether what it sends is still its to send.
type leader struct {
	c     *client.Client
	token string
	queue string
	out   io.Writer // what it does, one line per event
}

func (l leader) logf(format string, args ...any) {
	fmt.Fprintf(l.out, format+"\n", args...)
}

// next reads the queue's first undelivered message after the message
// after, or nil if there is none. The read is fenced: a leader superseded
// by a newer one's write gets a *client.StaleTokenError.
func (l leader) next(ctx context.Context, after int64) (*message, error) {
	res, err := l.c.Read(ctx, l.token, "next_message", map[string]any{"queue": l.queue, "after": after})
	if err != nil {
		return nil, err
	}
	ms, err := rowsOf[message](res.Statements, "next_message")
	if err != nil || len(ms) == 0 {
		return nil, err
	}
	return &ms[0], nil
}

// stale reads up to 100 undelivered messages of the queue requested more
// than olderThan ago, after the message after; fenced as next is.
func (l leader) stale(ctx context.Context, olderThan time.Duration, after int64) ([]message, error) {
	res, err := l.c.Read(ctx, l.token, "stale_messages",
		map[string]any{"queue": l.queue, "older_than_ms": olderThan.Milliseconds(), "after": after})
	if err != nil {
		return nil, err
	}
	return rowsOf[message](res.Statements, "stale_messages")
}

// markDelivered records m as carried out by the provider as its refund
// pspRef, found by via (dispatch or sweep). client.Write, not a lease's
// Write: there is no local check to pass, and a leader paused between its
// provider call and this send sends anyway what it prepared. That send is
// what the fence refuses, inside PostgreSQL, where a pause cannot slip
// past the check.
func (l leader) markDelivered(ctx context.Context, m message, pspRef, via string) error {
	_, err := l.c.Write(ctx, l.token, "mark_delivered",
		map[string]any{"queue": l.queue, "message": m.ID, "psp_ref": pspRef, "via": via})
	if err != nil {
		return fmt.Errorf("marking message %d (intent %s) delivered: %w", m.ID, m.Intent, err)
	}
	return nil
}

// rowsOf decodes the rows of an operation's only statement.
func rowsOf[T any](stmts []client.StatementResult, op string) ([]T, error) {
	if len(stmts) != 1 {
		return nil, fmt.Errorf("%s: %d statement results, want 1 (is the gateway serving examples/outbox/policy.yaml?)", op, len(stmts))
	}
	var rows []T
	if err := json.Unmarshal(stmts[0].Rows, &rows); err != nil {
		return nil, fmt.Errorf("%s: reading the rows: %w", op, err)
	}
	return rows, nil
}

// queueOf is the queue of a lock's resource, outbox/{queue}, or "".
func queueOf(resource string) string {
	q, ok := strings.CutPrefix(resource, "outbox/")
	if !ok {
		return ""
	}
	return q
}

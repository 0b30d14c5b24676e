package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// BatchWrite is one write of a batch: an operation, its arguments, and its
// token (Token for an operation of one resource, Tokens by role for one
// with several).
type BatchWrite struct {
	Operation string
	Args      any
	Token     string
	Tokens    map[string]string
}

// BatchResult is an applied batch: one Result per write, in order.
type BatchResult struct {
	Writes   []Result `json:"writes"`
	Replayed bool     `json:"-"`
}

// Batch sends writes to POST /v1/batch: applied in one transaction, all
// or none. A refusal is the error of the write that refused the batch,
// whose ProblemError has its Index. Like Write, it carries a new random
// Idempotency-Key unless WithIdempotencyKey gives one.
func (c *Client) Batch(ctx context.Context, writes []BatchWrite, opts ...WriteOption) (*BatchResult, error) {
	var o writeOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.key == "" {
		o.key = NewIdempotencyKey()
	}
	type wire struct {
		Operation string `json:"operation"`
		Args      any    `json:"args"`
		Token     any    `json:"token"`
	}
	body := struct {
		Writes []wire `json:"writes"`
	}{Writes: make([]wire, len(writes))}
	for i, w := range writes {
		var tok any = w.Token
		if w.Tokens != nil {
			tok = w.Tokens
		}
		args := w.Args
		if args == nil {
			args = json.RawMessage("{}")
		}
		body.Writes[i] = wire{Operation: w.Operation, Args: args, Token: tok}
	}
	h := http.Header{}
	h.Set(IdempotencyHeader, `"`+o.key+`"`)
	var res BatchResult
	got, err := c.do(ctx, call{method: "POST", path: "/v1/batch", header: h, body: body, want: 200, out: &res, resend: true})
	if err != nil {
		return nil, fmt.Errorf("batch of %d writes: %w", len(writes), err)
	}
	res.Replayed = got.Get(ReplayedHeader) == "true"
	return &res, nil
}

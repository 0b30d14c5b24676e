package psp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// maxSends bounds the refund requests of one Refund call whose outcome
// stayed unknown and that the provider then said it never got.
const maxSends = 3

var (
	// ErrNoRefund: a lookup found no refund under the key; nothing was
	// refunded under it.
	ErrNoRefund = errors.New("psp: the provider has no refund under this key")
	// ErrRefused: the provider answered no (a 4xx): this request refunded nothing,
	// and sending the same request again gets the same answer.
	ErrRefused = errors.New("psp: the provider refused the request")
	// ErrOutcomeUnknown: a request without an idempotency key went
	// unanswered. It may have been carried out, and the provider cannot be
	// asked which: sending it again may refund twice.
	ErrOutcomeUnknown = errors.New("psp: no answer to a request without an idempotency key: it may have been carried out")
)

// Request is a refund to ask for.
type Request struct {
	// IdempotencyKey makes the refund once however often it is asked;
	// "" sends none, and every request is a refund of its own.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	Reference      string `json:"reference,omitempty"`
	AmountCents    int64  `json:"amount_cents"`
}

// Client calls a payment provider.
type Client struct {
	base    string
	http    *http.Client
	timeout time.Duration // for one request and its answer
}

// NewClient returns a client of the provider at base, waiting at most
// timeout for each answer.
func NewClient(base string, timeout time.Duration) *Client {
	return &Client{base: base, http: http.DefaultClient, timeout: timeout}
}

// Refund asks the provider for req's refund and returns the refund it
// made. With an idempotency key, a request left unanswered (timeout,
// broken connection, 5xx) may have been carried out all the same, so the
// provider is asked what it did under the key, and the request is sent
// again only if it has nothing; queried says whether the refund came from
// such a query. Without a key nothing can be asked: an unanswered request
// is ErrOutcomeUnknown. ctx bounds the whole exchange.
func (c *Client) Refund(ctx context.Context, req Request) (ref Refund, queried bool, err error) {
	if req.IdempotencyKey == "" {
		err = c.do(ctx, "POST", "/refunds", req, &ref)
		if unknownOutcome(ctx, err) {
			err = fmt.Errorf("%w (%w)", ErrOutcomeUnknown, err)
		}
		return ref, false, err
	}
	for range maxSends {
		err = c.do(ctx, "POST", "/refunds", req, &ref)
		if !unknownOutcome(ctx, err) {
			return ref, queried, err
		}
		queried = true
		ref, err = c.Lookup(ctx, req.IdempotencyKey)
		if !errors.Is(err, ErrNoRefund) {
			// A query left unanswered too leaves the outcome unknown:
			// the caller asks again later, under the same key.
			return ref, queried, err
		}
	}
	return Refund{}, queried, fmt.Errorf("refund %s: %d requests unanswered, and the provider has none: %w", req.IdempotencyKey, maxSends, err)
}

// Lookup returns the refund the provider made under key, or ErrNoRefund.
func (c *Client) Lookup(ctx context.Context, key string) (Refund, error) {
	var ref Refund
	err := c.do(ctx, "GET", "/refunds/"+url.PathEscape(key), nil, &ref)
	return ref, err
}

// unknownOutcome reports whether err leaves open whether the provider
// carried out the request: anything but an answer, or the caller giving up.
func unknownOutcome(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && !errors.Is(err, ErrRefused)
}

// do sends one request, bounded by the client's timeout, and decodes a 200
// answer into out.
func (c *Client) do(ctx context.Context, method, path string, body any, out *Refund) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("provider: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return fmt.Errorf("provider: %s %s: reading the answer: %w", method, path, err)
		}
		return nil
	case resp.StatusCode == http.StatusNotFound && method == "GET":
		return ErrNoRefund
	case resp.StatusCode >= 500:
		return fmt.Errorf("provider: %s %s: %s", method, path, resp.Status)
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return fmt.Errorf("%w: %s %s: %s: %s", ErrRefused, method, path, resp.Status, bytes.TrimSpace(msg))
}

package main

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

// maxSends bounds the refund requests of one run whose outcome stayed
// unknown and that the provider then said it never got.
const maxSends = 3

var (
	errNoRefund        = errors.New("refund: the provider has no refund under this key")
	errProviderRefused = errors.New("refund: the provider refused the request")
)

// provider is the worker's client of the payment provider.
type provider struct {
	base    string
	http    *http.Client
	timeout time.Duration // for one request and its answer
}

func newProvider(base string, timeout time.Duration) *provider {
	return &provider{base: base, http: http.DefaultClient, timeout: timeout}
}

// refund asks the provider to refund amount under key and returns the
// refund it made, once per key however often it is asked. A request left
// unanswered (timeout, broken connection, 5xx) may have been carried out
// all the same, so the provider is asked what it did under key, and the
// request is sent again only if it has nothing. queried says whether the
// refund came from such a query. ctx bounds the whole exchange.
func (p *provider) refund(ctx context.Context, key string, amount int64) (ref pspRefund, queried bool, err error) {
	body := map[string]any{"idempotency_key": key, "amount_cents": amount}
	for range maxSends {
		err = p.do(ctx, "POST", "/refunds", body, &ref)
		if !unknownOutcome(ctx, err) {
			return ref, queried, err
		}
		queried = true
		err = p.do(ctx, "GET", "/refunds/"+url.PathEscape(key), nil, &ref)
		if !errors.Is(err, errNoRefund) {
			// A query left unanswered too leaves the intent pending: the
			// next run asks again.
			return ref, queried, err
		}
	}
	return pspRefund{}, queried, fmt.Errorf("refund %s: %d requests unanswered, and the provider has none: %w", key, maxSends, err)
}

// unknownOutcome reports whether err leaves open whether the provider
// carried out the request: anything but an answer, or the caller giving up.
func unknownOutcome(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && !errors.Is(err, errProviderRefused)
}

// do sends one request, bounded by the provider timeout, and decodes a
// 200 answer into out.
func (p *provider) do(ctx context.Context, method, path string, body any, out *pspRefund) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.http.Do(req)
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
		return errNoRefund
	case resp.StatusCode >= 500:
		return fmt.Errorf("provider: %s %s: %s", method, path, resp.Status)
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return fmt.Errorf("%w: %s %s: %s: %s", errProviderRefused, method, path, resp.Status, bytes.TrimSpace(msg))
}

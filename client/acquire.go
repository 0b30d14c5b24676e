package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Lease defaults.
const (
	DefaultTTL      = 10 * time.Second
	minSafetyMargin = 100 * time.Millisecond
	cleanupTimeout  = 5 * time.Second
)

// AcquireOptions are the terms of a lease request.
type AcquireOptions struct {
	// TTL is how long the lease lasts without a keepalive: 1 s to 1 h,
	// sent in whole seconds, rounded up; 0 means DefaultTTL.
	TTL time.Duration
	// Wait is how long the gateway may wait for the current holder to let
	// go: up to 5 minutes; 0 tries once and fails with *LockedError.
	Wait time.Duration
	// SafetyMargin is taken off the lease's local deadline; 0 means
	// max(TTL/10, 100ms). It must be less than TTL.
	SafetyMargin time.Duration
	// Value is shown to observers of the lock while the lease holds it
	// (up to 4 KiB): a leader's address, say.
	Value string
	// IdempotencyKey makes the acquisition one however often it is sent:
	// a retry with it gets the first attempt's lease while that lives,
	// never a second one. Acquire makes a random one when it is empty,
	// and retries with it when an answer is lost (a broken connection, a
	// 502, 503 or 504), so the lease it was granted is the one it gets.
	IdempotencyKey string
	// Permits says the resource is a semaphore of this many permits, as
	// the gateway's policy declares it: the lease is then one permit slot
	// (Lease.Permit), and a policy that says otherwise is refused (400)
	// rather than granting something else. 0 sends nothing: the policy
	// decides, and Lease.Permit tells.
	Permits int
}

type acquireRequest struct {
	Resource string  `json:"resource"`
	TTL      int64   `json:"ttl"`  // seconds
	Wait     float64 `json:"wait"` // seconds
	Value    string  `json:"value,omitempty"`
	Permits  int     `json:"permits,omitempty"`
}

type leaseResponse struct {
	LeaseID  string `json:"lease_id"`
	Resource string `json:"resource"`
	Token    string `json:"token"`
	TTL      int64  `json:"ttl"` // seconds
	Permit   int    `json:"permit"`
	Permits  int    `json:"permits"`
}

// Acquire takes the lock on resource and returns the lease, kept alive
// until Release; on a semaphore, a free permit of it (Lease.Permit). With opts.Wait 0 a held resource fails at once with a
// *LockedError naming the holder's token. ctx bounds the request,
// including the wait; cancelling it later does not end the lease.
//
// An answer lost on the way (a broken connection, a 502, 503 or 504) is
// asked for again with the acquisition's idempotency key, of the next
// replica, a few times while ctx lasts: the gateway answers the retry
// with the lease it granted the first attempt, if it did. If ctx ends first, that lease is unknown
// to the caller and lasts until its TTL runs out on the gateway.
func (c *Client) Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Lease, error) {
	ttl := cmp.Or(opts.TTL, DefaultTTL)
	if opts.TTL < 0 || opts.Wait < 0 || opts.SafetyMargin < 0 || opts.SafetyMargin >= ttl || opts.Permits < 0 {
		return nil, fmt.Errorf("acquire %s: %w: want TTL, Wait, SafetyMargin and Permits >= 0 and SafetyMargin < TTL", resource, ErrBadOptions)
	}
	req := acquireRequest{Resource: resource, TTL: int64((ttl + time.Second - 1) / time.Second), Wait: opts.Wait.Seconds(), Value: opts.Value, Permits: opts.Permits}
	// The deadline counts from before the request: the gateway grants the
	// TTL at some later instant, so the lease lasts at least this long.
	sent := c.clock.Now()
	var resp leaseResponse
	if err := c.acquireOnce(ctx, req, cmp.Or(opts.IdempotencyKey, NewIdempotencyKey()), &resp); err != nil {
		return nil, fmt.Errorf("acquire %s: %w", resource, err)
	}
	if resp.LeaseID == "" || resp.Token == "" || resp.TTL < 1 {
		if resp.LeaseID != "" {
			c.releaseQuietly(ctx, resp.LeaseID)
		}
		return nil, fmt.Errorf("acquire %s: %w: the 201 answer lacks lease_id, token or ttl", resource, ErrUnexpectedResponse)
	}
	resp.Resource = cmp.Or(resp.Resource, resource)
	margin := opts.SafetyMargin
	if margin == 0 {
		margin = max(time.Duration(resp.TTL)*time.Second/10, minSafetyMargin)
	}
	// After a long wait (or a slow answer) little may be left of the TTL
	// counted from the request, though the gateway renewed the lease when
	// it granted the lock: a keepalive now, before the deadline is armed,
	// tells how long it really lasts. If its answer is lost, the deadline
	// stays counted from the request, and the keepalive goroutine renews
	// as it would after any lost answer.
	if c.clock.Now().Sub(sent) >= time.Duration(resp.TTL)*time.Second/3 {
		renewed := c.clock.Now()
		var ka leaseResponse
		_, err := c.do(ctx, call{method: "POST", path: leasePath(resp.LeaseID) + "/keepalive", want: 200, out: &ka})
		switch {
		case errors.Is(err, ErrLeaseLost):
			return nil, fmt.Errorf("acquire %s: %w: keepalive after the wait: %w", resource, ErrLeaseLost, err)
		case err != nil && answerLost(err):
		case err != nil:
			c.releaseQuietly(ctx, resp.LeaseID)
			return nil, fmt.Errorf("acquire %s: keepalive after the wait: %w", resource, err)
		case ka.TTL >= 1:
			sent, resp.TTL = renewed, ka.TTL
		}
	}
	l := newLease(ctx, c, resp, margin, sent)
	l.name = resource
	if err := l.Err(); err != nil {
		c.releaseQuietly(ctx, l.id)
		return nil, fmt.Errorf("acquire %s: %w", resource, err)
	}
	go l.keepAlive()
	return l, nil
}

// releaseQuietly releases a lease the caller will never see, on a context
// of its own: the caller's may be what failed.
func (c *Client) releaseQuietly(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = c.release(ctx, id)
}

// acquireOnce sends the acquisition req under key, and again under the
// same key while its answer is lost (retry), or ctx ends.
func (c *Client) acquireOnce(ctx context.Context, req acquireRequest, key string, out *leaseResponse) error {
	h := http.Header{IdempotencyHeader: {`"` + key + `"`}}
	_, err := c.do(ctx, call{method: "POST", path: "/v1/leases", header: h, body: req, want: 201, out: out, resend: true})
	return err
}

package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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
}

type acquireRequest struct {
	Resource string  `json:"resource"`
	TTL      int64   `json:"ttl"`  // seconds
	Wait     float64 `json:"wait"` // seconds
	Value    string  `json:"value,omitempty"`
}

type leaseResponse struct {
	LeaseID  string `json:"lease_id"`
	Resource string `json:"resource"`
	Token    string `json:"token"`
	TTL      int64  `json:"ttl"` // seconds
}

// Acquire takes the lock on resource and returns the lease, kept alive
// until Release. With opts.Wait 0 a held resource fails at once with a
// *LockedError naming the holder's token. ctx bounds the request,
// including the wait; cancelling it later does not end the lease.
//
// If ctx ends after the gateway granted the lease but before its answer
// arrived, the lease is unknown to the caller and lasts until its TTL runs
// out on the gateway.
func (c *Client) Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Lease, error) {
	ttl := cmp.Or(opts.TTL, DefaultTTL)
	if opts.TTL < 0 || opts.Wait < 0 || opts.SafetyMargin < 0 || opts.SafetyMargin >= ttl {
		return nil, fmt.Errorf("acquire %s: %w: want TTL, Wait and SafetyMargin >= 0 and SafetyMargin < TTL", resource, ErrBadOptions)
	}
	req := acquireRequest{Resource: resource, TTL: int64((ttl + time.Second - 1) / time.Second), Wait: opts.Wait.Seconds(), Value: opts.Value}
	// The deadline counts from before the request: the gateway grants the
	// TTL at some later instant, so the lease lasts at least this long.
	sent := c.clock.Now()
	var resp leaseResponse
	if _, err := c.do(ctx, call{method: "POST", path: "/v1/leases", body: req, want: 201, out: &resp}); err != nil {
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
	// After a long wait little may be left of the TTL counted from the
	// request, though the gateway renewed the lease when it granted the
	// lock: a keepalive now, before the deadline is armed, tells how long
	// it really lasts.
	if c.clock.Now().Sub(sent) >= time.Duration(resp.TTL)*time.Second/3 {
		renewed := c.clock.Now()
		var ka leaseResponse
		_, err := c.do(ctx, call{method: "POST", path: leasePath(resp.LeaseID) + "/keepalive", want: 200, out: &ka})
		switch {
		case errors.Is(err, ErrLeaseLost):
			return nil, fmt.Errorf("acquire %s: %w: keepalive after the wait: %w", resource, ErrLeaseLost, err)
		case err != nil:
			c.releaseQuietly(ctx, resp.LeaseID)
			return nil, fmt.Errorf("acquire %s: keepalive after the wait: %w", resource, err)
		case ka.TTL >= 1:
			sent, resp.TTL = renewed, ka.TTL
		}
	}
	l := newLease(ctx, c, resp, margin, sent)
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

package client

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Keepalive retry bounds after a transient failure (network, 503): the
// first retry after minRetry, doubling up to maxRetry (and TTL/3), until a
// keepalive succeeds or the local deadline ends the lease.
const (
	minRetry = 100 * time.Millisecond
	maxRetry = 2 * time.Second
)

// keepAlive renews the lease every TTL/3 until it ends. It is the one
// goroutine a Lease owns: it returns when the lease's context ends
// (Release, loss, expiry) and Release waits for it.
func (l *Lease) keepAlive() {
	defer close(l.stopped)
	retry := minRetry
	wait := l.renewIn()
	for sleep(l.ctx, l.clock, wait) == nil {
		err := l.renew(l.ctx)
		switch {
		case err == nil:
			retry = minRetry
			wait = l.renewIn()
		case errors.Is(err, ErrLeaseLost):
			l.end(fmt.Errorf("%w: keepalive: %w", ErrLeaseLost, err), true)
			return
		default:
			// Network, 503, a proxy's page, a cancelled request: only the
			// gateway's 404 means lost; the rest is retried until the
			// deadline.
			if f := l.c.onRenewErr; f != nil {
				f(RenewFailure{Resource: l.resource, LeaseID: l.id, Err: err, Left: l.Deadline().Sub(l.clock.Now())})
			}
			wait = retry
			retry = l.nextRetry(retry)
		}
	}
}

// renewIn is the wait before the next keepalive: TTL/3, or half of what is
// left before the deadline if that is shorter (a large safety margin).
func (l *Lease) renewIn() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return min(l.ttl/3, l.deadline.Sub(l.clock.Now())/2)
}

// nextRetry doubles retry, up to maxRetry and TTL/3.
func (l *Lease) nextRetry(retry time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return min(2*retry, maxRetry, max(l.ttl/3, minRetry))
}

// renew sends one keepalive, moves the deadline and adopts the token the
// gateway signed again.
func (l *Lease) renew(ctx context.Context) error {
	sent := l.clock.Now()
	var resp leaseResponse
	if _, err := l.c.do(ctx, call{method: "POST", path: leasePath(l.id) + "/keepalive", want: 200, out: &resp}); err != nil {
		return err
	}
	if resp.TTL < 1 {
		return fmt.Errorf("%w: the keepalive answer has ttl %d", ErrUnexpectedResponse, resp.TTL)
	}
	l.extend(sent, time.Duration(resp.TTL)*time.Second)
	l.resigned(resp.Token)
	return nil
}

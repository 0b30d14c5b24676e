package client

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"
)

// Lease is a lock on a resource held through the gateway, and the fencing
// token that goes with it. A goroutine owned by the Lease keeps it alive
// until Release, until the gateway says it is gone, or until its local
// deadline passes; then Done closes and Err says why. Its methods are safe
// for concurrent use.
//
// Safety: a Lease is never proof that its holder still holds the lock. It
// may end on the gateway before the client notices, never the other way
// round (see Deadline), and a process can pause at any instant, for any
// time, between a check of the lease and its write reaching PostgreSQL.
// Only the fence in the database is the guarantee; the local deadline just
// stops the client from sending writes that are obviously late.
type Lease struct {
	c        *Client
	clock    Clock
	id       string
	resource string
	name     string // as acquired: a semaphore's, where resource is the permit slot's
	permit   int    // a semaphore's slot; 0 for a lock
	permits  int
	margin   time.Duration

	ctx     context.Context // cancelled, with the reason as cause, when the lease ends
	cancel  context.CancelCauseFunc
	stopped chan struct{} // closed when the keepalive goroutine has returned

	mu       sync.Mutex
	token    string        // as granted, or as the last keepalive signed it again
	ttl      time.Duration // as last granted
	deadline time.Time
	expiry   Timer // ends the lease at the deadline
	gone     bool  // the gateway no longer has the lease
}

func newLease(ctx context.Context, c *Client, resp leaseResponse, margin time.Duration, sent time.Time) *Lease {
	l := &Lease{
		c: c, clock: c.clock, id: resp.LeaseID, resource: resp.Resource, token: resp.Token, margin: margin,
		permit: resp.Permit, permits: resp.Permits,
		stopped: make(chan struct{}),
	}
	// The lease outlives the call that acquired it but keeps its values.
	l.ctx, l.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ttl = time.Duration(resp.TTL) * time.Second
	l.deadline = sent.Add(l.ttl - margin) // from the request, not the answer: see Deadline
	l.expiry = l.clock.AfterFunc(l.deadline.Sub(l.clock.Now()), l.checkExpiry)
	return l
}

// ID returns the gateway's lease ID.
func (l *Lease) ID() string { return l.id }

// Resource returns the locked resource: for a semaphore's permit, the
// permit slot's, "<semaphore>#<permit>", which its writes are fenced
// under.
func (l *Lease) Resource() string { return l.resource }

// Permit returns the slot of a semaphore's permit (1 to Permits), 0 for
// an exclusive lock. Its token names the slot ("E:R#P:SIGNATURE"); its
// writes need nothing else.
func (l *Lease) Permit() int { return l.permit }

// Permits returns how many permits the semaphore has, 0 for an exclusive
// lock.
func (l *Lease) Permits() int { return l.permits }

// Token returns the fencing token, text form E:R:SIGNATURE: a capability
// for this lease's resource and client. Keep it out of logs; Unsigned
// gives its place in the order. A keepalive may bring the same E:R signed
// by a newer signing key (after a key rotation): Token returns that one
// from then on, and the lease's writes send it, so that retiring the old
// key refuses none of them. Read it for each write rather than once.
func (l *Lease) Token() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.token
}

// resigned adopts token, a keepalive's, if it is the lease's token signed
// again: the same place in the order. Anything else is not this lease's
// token, and the one it has stays.
func (l *Lease) resigned(token string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if token != "" && Unsigned(token) == Unsigned(l.token) && token != Unsigned(token) {
		l.token = token
	}
}

// Deadline returns the local deadline: when the last successful acquire or
// keepalive request was sent, plus the TTL the gateway granted, minus the
// safety margin. The gateway grants or renews the TTL at some instant after
// the request was sent, so the lease lasts on the gateway at least until
// Deadline plus the margin, which absorbs clock-rate drift and the time a
// write spends in flight.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Done returns a channel closed when the lease ends: released, lost, or
// past its local deadline.
func (l *Lease) Done() <-chan struct{} { return l.ctx.Done() }

// Context returns a context, with the values of the one Acquire was called
// with, cancelled when the lease ends; context.Cause of it is Err. Run the
// work the lease protects under it.
func (l *Lease) Context() context.Context { return l.ctx }

// Err returns nil while the lease lasts, then why it ended: an error that
// is ErrReleased, ErrLeaseLost or ErrLeaseExpired. The first reason stays.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errLocked()
}

// errLocked is Err, ending the lease if its deadline has passed but the
// expiry timer has not fired yet (late after a suspend, for one).
func (l *Lease) errLocked() error {
	if l.ctx.Err() == nil && l.expired(l.clock.Now()) {
		l.endLocked(errExpired)
	}
	return context.Cause(l.ctx)
}

var errExpired = fmt.Errorf("%w: no keepalive succeeded before the local deadline", ErrLeaseExpired)

// expired reports whether now is at or past the deadline. The monotonic
// reading decides, unless the wall clock says so first: on Linux the
// monotonic clock stops while the machine is suspended, but the lease's
// TTL on the gateway runs on, and a wall-clock step forward can only end
// the lease early, which is safe.
func (l *Lease) expired(now time.Time) bool {
	return !now.Before(l.deadline) || !now.Round(0).Before(l.deadline.Round(0))
}

// checkExpiry runs at the deadline: it ends the lease, or waits for the
// deadline a keepalive has since moved.
func (l *Lease) checkExpiry() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx.Err() != nil {
		return
	}
	now := l.clock.Now()
	if l.expired(now) {
		l.endLocked(errExpired)
		return
	}
	l.expiry = l.clock.AfterFunc(l.deadline.Sub(now), l.checkExpiry)
}

// extend moves the deadline after a keepalive sent at sent was granted
// ttl. An ended lease stays ended.
func (l *Lease) extend(sent time.Time, ttl time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx.Err() != nil {
		return
	}
	// The newest grant is the gateway's word, even if it is shorter.
	d := sent.Add(ttl - l.margin)
	if d.Before(l.deadline) {
		l.expiry.Stop()
		l.expiry = l.clock.AfterFunc(d.Sub(l.clock.Now()), l.checkExpiry)
	}
	l.ttl, l.deadline = ttl, d
}

// end ends the lease with cause unless it has ended already; gone records
// that the gateway no longer has it.
func (l *Lease) end(cause error, gone bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gone = l.gone || gone
	l.endLocked(cause)
}

func (l *Lease) endLocked(cause error) {
	if l.ctx.Err() != nil {
		return
	}
	l.expiry.Stop()
	l.cancel(cause)
}

// Release ends the lease and releases the lock on the gateway, so the next
// waiter gets it at once. It stops the keepalive goroutine and waits for
// it to return before sending DELETE; ctx bounds the whole call.
//
// When the gateway answers that the lease is already gone (404), Release
// returns nil if the lease had ended already (lost, or past its local
// deadline: the lock is free, as asked), and an error that is ErrLeaseLost
// if the client still believed it held the lease: it was lost unnoticed,
// which the caller may want to know. After a successful Release, or once
// the lease was lost, Release sends nothing and returns nil.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	live := l.errLocked() == nil
	l.endLocked(ErrReleased)
	gone := l.gone
	l.mu.Unlock()
	select {
	case <-l.stopped:
	case <-ctx.Done():
		return fmt.Errorf("release lease %s: %w", l.id, ctx.Err())
	}
	if gone {
		return nil
	}
	err := l.c.release(ctx, l.id)
	if err == nil || errors.Is(err, ErrLeaseLost) {
		l.end(ErrReleased, true)
	}
	if err == nil || (errors.Is(err, ErrLeaseLost) && !live) {
		return nil
	}
	return fmt.Errorf("release lease %s: %w", l.id, err)
}

// release sends DELETE for the lease id, again while its answer is lost.
// A 404 to a DELETE sent again is the release of an earlier attempt whose
// answer was lost: nil.
func (c *Client) release(ctx context.Context, id string) error {
	var resent bool
	_, err := c.do(ctx, call{method: "DELETE", path: leasePath(id), want: 204, resend: true, resent: &resent})
	if resent && errors.Is(err, ErrLeaseLost) {
		return nil
	}
	return err
}

func leasePath(id string) string { return "/v1/leases/" + url.PathEscape(id) }

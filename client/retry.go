package client

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"
)

// callAttempts bounds how often one request is sent when its answers are
// lost: the first time and three more, each to the next replica.
const callAttempts = 4

// Backoff between the attempts of one request.
const (
	resendMin = 100 * time.Millisecond
	resendMax = time.Second
)

// retry calls send with the base URL of the replica to ask, first the
// preferred one. When the answer is lost (answerLost), the next replica
// becomes the preferred one, and if k may be sent again it is, after a
// backoff, until callAttempts were sent or ctx ends.
//
// The error returned is the last answer's, with one exception: when an
// earlier attempt may have been applied (its answer lost after it was
// sent) and the last says "not applied", the earlier one is returned, so
// that the caller is never told "not applied" of a request that may have
// been.
func (c *Client) retry(ctx context.Context, k call, send func(base string) (http.Header, error)) (http.Header, error) {
	attempts := 1
	if k.resend {
		attempts = callAttempts
	}
	n := int64(len(c.bases))
	backoff := resendMin
	var unknown error // the last answer lost after the request may have arrived
	for attempt := 1; ; attempt++ {
		if k.resent != nil {
			*k.resent = attempt > 1
		}
		i := c.preferred.Load() % n
		h, err := send(c.bases[i])
		if err == nil {
			return h, nil
		}
		if !answerLost(err) {
			return nil, err
		}
		c.preferred.CompareAndSwap(i, (i+1)%n)
		if !notApplied(err) {
			unknown = err
		}
		if attempt >= attempts || ctx.Err() != nil {
			if unknown != nil {
				return nil, unknown
			}
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, resendMax)
	}
}

// answerLost reports whether err says nothing final of what the gateway
// did with a request, so that asking again (another replica, later) may
// get an answer: the connection failed or broke, or something in between
// (or the gateway, with PostgreSQL or etcd away) answered 502, 503 or
// 504. A halted authority waits for an operator, a refused certificate
// for a new configuration: neither is lost.
func answerLost(err error) bool {
	var cert *tls.CertificateVerificationError
	switch {
	case errors.Is(err, ErrAuthorityHalted), errors.As(err, &cert):
		return false
	case errors.Is(err, ErrUnavailable):
		return true
	case errors.Is(err, ErrBadOptions), errors.Is(err, ErrUnexpectedResponse),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	var p *ProblemError
	return !errors.As(err, &p)
}

// notApplied reports whether a lost answer says the request had no
// effect: the gateway's 503 with outcome not-applied, or a connection
// that was never made.
func notApplied(err error) bool {
	var p *ProblemError
	if errors.As(err, &p) {
		return p.Outcome == "not-applied"
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

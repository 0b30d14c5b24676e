package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// LeaseSet is several leases held together, for writes fenced on several
// resources (a transfer's two accounts). AcquireAll takes them in
// canonical order, by resource name, so two clients wanting overlapping
// sets never hold one each while waiting for the other's; it gets all or
// none. The set ends as soon as any of its leases ends.
type LeaseSet struct {
	c      *Client
	leases []*Lease // in canonical order
	ctx    context.Context
	cancel context.CancelCauseFunc
	stops  []func() bool // stop watching the leases
}

// AcquireAll takes a lease on each of resources, in canonical order, each
// on opts' terms (opts.Wait applies to each lease in turn). If one cannot
// be had, the ones already taken are released and the error is the one
// Acquire gave. ctx bounds the whole acquisition.
func (c *Client) AcquireAll(ctx context.Context, resources []string, opts AcquireOptions) (*LeaseSet, error) {
	sorted := slices.Clone(resources)
	slices.Sort(sorted)
	if len(sorted) == 0 || len(slices.Compact(slices.Clone(sorted))) != len(sorted) {
		return nil, fmt.Errorf("acquire all: %w: want one or more distinct resources", ErrBadOptions)
	}
	s := &LeaseSet{c: c}
	for _, r := range sorted {
		l, err := c.Acquire(ctx, r, opts)
		if err != nil {
			s.releaseTaken(ctx)
			return nil, err
		}
		s.leases = append(s.leases, l)
	}
	s.ctx, s.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	for _, l := range s.leases {
		s.stops = append(s.stops, context.AfterFunc(l.Context(), func() {
			s.cancel(fmt.Errorf("lease on %s: %w", l.Resource(), context.Cause(l.Context())))
		}))
	}
	return s, nil
}

// releaseTaken releases the leases of a set that could not be completed.
func (s *LeaseSet) releaseTaken(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	for _, l := range s.leases {
		_ = l.Release(cctx)
	}
}

// Leases returns the set's leases in canonical order.
func (s *LeaseSet) Leases() []*Lease { return slices.Clone(s.leases) }

// Lease returns the lease on resource (as acquired, or a semaphore
// permit's slot), or nil if the set has none.
func (s *LeaseSet) Lease(resource string) *Lease {
	for _, l := range s.leases {
		if l.Resource() == resource || l.name == resource {
			return l
		}
	}
	return nil
}

// Done is closed when any lease of the set ends.
func (s *LeaseSet) Done() <-chan struct{} { return s.ctx.Done() }

// Context is cancelled when any lease of the set ends; its cause is Err.
func (s *LeaseSet) Context() context.Context { return s.ctx }

// Err returns nil while every lease lasts, then why the first one ended.
func (s *LeaseSet) Err() error {
	for _, l := range s.leases {
		if err := l.Err(); err != nil {
			return fmt.Errorf("lease on %s: %w", l.Resource(), err)
		}
	}
	return context.Cause(s.ctx)
}

// Write sends operation with args, fenced by the tokens of the set's
// leases: roles maps each role of the operation to the resource of the
// set that plays it, e.g. {"from": "account/acct-1", "to":
// "account/acct-2"}. It sends nothing once any lease has ended. See
// Client.Write for the rest.
func (s *LeaseSet) Write(ctx context.Context, operation string, roles map[string]string, args any, opts ...WriteOption) (*Result, error) {
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("write %s: not sent: %w", operation, err)
	}
	toks := make(map[string]string, len(roles))
	for role, resource := range roles {
		l := s.Lease(resource)
		if l == nil {
			return nil, fmt.Errorf("write %s: %w: role %s's resource %s is not in the set", operation, ErrBadOptions, role, resource)
		}
		toks[role] = l.Token()
	}
	return s.c.Write(ctx, RoleTokens(toks), operation, args, opts...)
}

// Release releases every lease of the set, so their next waiters get the
// locks at once; it returns the errors of the ones that failed. ctx bounds
// the whole call.
func (s *LeaseSet) Release(ctx context.Context) error {
	for _, stop := range s.stops {
		stop()
	}
	s.cancel(ErrReleased)
	var errs []error
	for _, l := range s.leases {
		errs = append(errs, l.Release(ctx))
	}
	return errors.Join(errs...)
}

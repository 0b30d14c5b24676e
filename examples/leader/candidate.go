package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/examples/internal/holdpoint"
)

const (
	writeTimeout   = 10 * time.Second // one write, as the gateway's default --write-timeout
	releaseTimeout = 5 * time.Second
	retryPause     = time.Second // after a campaign failed on an unreachable gateway
)

// leadArgs are the arguments of the policy's lead operation.
type leadArgs struct {
	Group string `json:"group"`
	Who   string `json:"who"`
	N     int    `json:"n"`
}

// run campaigns for the group's leadership, leads while its lease lasts,
// and campaigns again after stepping down, until ctx ends. It returns an
// error only for a refusal that campaigning again would not cure.
func run(ctx context.Context, cfg config, ev *events) error {
	if err := cfg.check(); err != nil {
		return err
	}
	c := newClient(cfg)
	for ctx.Err() == nil {
		lease, err := campaign(ctx, c, cfg, ev)
		switch {
		case err == nil:
			if err := lead(ctx, c, cfg, lease, ev); err != nil {
				return err
			}
		case ctx.Err() != nil: // stopping: the loop ends
		case transient(err):
			ev.printf("campaign: %v", err)
			sleep(ctx, retryPause)
		default:
			return err
		}
	}
	return nil
}

// campaign waits in line for the group's lease, printing who leads
// meanwhile, and returns the lease once granted. The line is the
// gateway's: a lease request waits behind the holder and the candidates
// that came first, and is granted when they let go or their leases expire.
func campaign(ctx context.Context, c *client.Client, cfg config, ev *events) (*client.Lease, error) {
	ev.printf("campaigning for %s as %s", cfg.resource(), cfg.Name)
	fctx, stop := context.WithCancel(ctx)
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		follow(fctx, c, cfg, cfg.Name, ev)
	}()
	defer func() { stop(); <-followed }()
	for {
		lease, err := c.Acquire(ctx, cfg.resource(), client.AcquireOptions{TTL: cfg.TTL, Wait: cfg.Wait, Value: cfg.Name})
		if errors.Is(err, client.ErrLocked) || errors.Is(err, client.ErrLeaseLost) {
			continue // waited cfg.Wait in vain, or the lease ran out in the wait: line up again
		}
		return lease, err
	}
}

// lead writes as the group's leader, at once and then every cfg.Every,
// until the lease ends, the fence refuses a write, or ctx ends; then it
// steps down. It returns an error only for a refusal that campaigning
// again would not cure.
func lead(ctx context.Context, c *client.Client, cfg config, lease *client.Lease, ev *events) error {
	defer stepDown(ctx, lease, ev)
	token := lease.Token()
	shown := client.Unsigned(token) // the signed token is a capability: not for logs
	ev.printf("leading %s with token %s", cfg.resource(), shown)
	tick := time.NewTicker(cfg.Every)
	defer tick.Stop()
	for n := 1; ctx.Err() == nil; n++ {
		if err := lease.Err(); err != nil {
			ev.printf("lease ended: %v", err)
			return nil
		}
		args := leadArgs{Group: cfg.Group, Who: cfg.Name, N: n}
		// A process can stop for any time at any instant: a GC pause, a
		// SIGSTOP, a suspended VM. Between the check above and the send
		// below, its lease may expire and a successor lead and write; on
		// waking it sends exactly what it prepared, with the token it had.
		// lease.Write would check the lease once more before sending, which
		// narrows the window without closing it (a pause just after that
		// check, or a request slow on the network, is the same), so this
		// sends with Client.Write: what stops a late write is the fence in
		// PostgreSQL, and nothing else. The hold point lets a test freeze
		// the process exactly here; it does nothing otherwise.
		holdpoint.Here("write")
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		_, err := c.Write(wctx, token, "lead", args)
		cancel()
		var stale *client.StaleTokenError
		switch {
		case err == nil:
			ev.printf("wrote %d with token %s", n, shown)
		case errors.As(err, &stale):
			ev.printf("stale: write %d with token %s refused, the fence is at %s", n, shown, stale.Current)
			return nil
		case errors.Is(err, client.ErrTokenRejected):
			// A token of an epoch before `fencegw epoch bump`: this lease can
			// never write again, but a new one can.
			ev.printf("token %s rejected: %v", shown, err)
			return nil
		case transient(err):
			// The write may have been applied or not; either way the lease,
			// checked before the next write, says whether to go on.
			ev.printf("write %d: %v", n, err)
		default:
			return fmt.Errorf("write %d: %w", n, err)
		}
		select {
		case <-ctx.Done():
		case <-lease.Done(): // the check at the top says why
		case <-tick.C:
		}
	}
	return nil
}

// stepDown releases the lease so that the next candidate leads at once,
// not after the TTL and the lock-delay. It runs on a context of its own:
// ctx ending may be why the term ended.
func stepDown(ctx context.Context, lease *client.Lease, ev *events) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := lease.Release(rctx); err != nil {
		ev.printf("stepped down (release: %v)", err)
		return
	}
	ev.printf("stepped down")
}

// transient reports whether err may pass if tried again: the gateway was
// unreachable or unavailable, or an answer was not the gateway's own. Any
// other refusal comes from the configuration or the policy.
func transient(err error) bool {
	var p *client.ProblemError
	return errors.Is(err, client.ErrUnavailable) || (!errors.As(err, &p) && !errors.Is(err, client.ErrBadOptions))
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

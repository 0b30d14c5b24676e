package main

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegw/fencegw/client"
)

// observe follows the group's election until ctx ends, without taking
// part in it: the --observe mode.
func observe(ctx context.Context, cfg config, ev *events) error {
	if err := cfg.check(); err != nil {
		return err
	}
	follow(ctx, newClient(cfg), cfg, "", ev)
	return nil
}

// follow prints who leads the group whenever the leader or the number of
// waiting candidates changes, looking every cfg.Poll until ctx ends. It
// reads the lock's holder and waiters; it takes no part in the election.
// A holder whose name is self is left out: that is this candidate, granted
// the lease a moment before its campaign stops following. The holder shown
// is the candidate first in line: after an expiry, it may still be waiting
// out the lock-delay, not yet told that it leads.
func follow(ctx context.Context, c *client.Client, cfg config, self string, ev *events) {
	tick := time.NewTicker(cfg.Poll)
	defer tick.Stop()
	last := ""
	for {
		st, err := c.Observe(ctx, cfg.resource())
		if ctx.Err() != nil {
			return
		}
		if key, line := describe(st, err); key != last && !leads(st, self) {
			ev.printf("%s", line)
			last = key
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// describe says what an observation shows, and a key that changes when
// the leader or the number of waiters does, not when the remaining TTL
// ticks down.
func describe(st *client.LockState, err error) (key, line string) {
	switch {
	case err != nil:
		return "error " + err.Error(), fmt.Sprintf("observe: %v", err)
	case st.Holder == nil:
		return fmt.Sprintf("none %d", len(st.Waiters)), fmt.Sprintf("no leader (%d waiting)", len(st.Waiters))
	}
	h := st.Holder
	name := h.Value
	if name == "" {
		name = "(no name)"
	}
	return fmt.Sprintf("%s %d", h.Token, len(st.Waiters)),
		fmt.Sprintf("following %s (token %s, ttl %s, %d waiting)", name, h.Token, h.TTL, len(st.Waiters))
}

// leads reports whether st shows name as the holder.
func leads(st *client.LockState, name string) bool {
	return name != "" && st != nil && st.Holder != nil && st.Holder.Value == name
}

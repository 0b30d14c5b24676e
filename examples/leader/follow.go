package main

import (
	"context"
	"fmt"

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

// follow prints who leads the group, and each change of leader, value or
// end of a term, as the gateway's watch of the lock reports them, until
// ctx ends. It takes no part in the election, and does not poll: the
// watch pushes every change, and resumes where it broke if its stream
// does. A leader whose name is self is left out: that is this candidate,
// granted the lease a moment before its campaign stops following. A
// refused watch is asked for again every cfg.Poll.
func follow(ctx context.Context, c *client.Client, cfg config, self string, ev *events) {
	for ctx.Err() == nil {
		events, err := c.Watch(ctx, cfg.resource())
		if err != nil {
			if ctx.Err() == nil {
				ev.printf("watch: %v", err)
				sleep(ctx, cfg.Poll)
			}
			continue
		}
		for e := range events {
			if e.Type == "error" {
				ev.printf("watch: %v", e.Err)
				sleep(ctx, cfg.Poll)
				break
			}
			if line := describe(e); line != "" && !leads(e, self) {
				ev.printf("%s", line)
			}
		}
	}
}

// describe says what a watch event shows of the election; "" for events
// that show nothing new (synced; relist, which the state follows).
func describe(e client.WatchEvent) string {
	switch e.Type {
	case "state", "granted", "value":
		if e.Holder == nil {
			return "no leader"
		}
		line := fmt.Sprintf("following %s (token %s, term %d", nameOf(e.Holder), e.Holder.Token, e.Transitions)
		if e.Type == "state" {
			line += fmt.Sprintf(", ttl %s", e.Holder.TTL)
		}
		return line + ")"
	case "released", "expired", "revoked", "ended":
		return fmt.Sprintf("no leader: %s's lease %s", nameOf(e.Holder), e.Type)
	}
	return ""
}

func nameOf(h *client.Contender) string {
	if h == nil || h.Value == "" {
		return "(no name)"
	}
	return h.Value
}

// leads reports whether e shows name as the leader.
func leads(e client.WatchEvent, name string) bool {
	return name != "" && e.Holder != nil && e.Holder.Value == name && (e.Type == "state" || e.Type == "granted" || e.Type == "value")
}

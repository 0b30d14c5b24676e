package main

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegw/fencegw/client"
)

// The scenarios of what happens to the gateway around the client.
func init() {
	scenarios["key-rotation"] = func(r *run) error {
		l, err := r.c.Acquire(r.ctx, r.str("resource"), client.AcquireOptions{TTL: r.seconds("ttl")})
		if err != nil {
			return err
		}
		defer l.Release(r.ctx)
		args := r.debit(r.num("amount_cents"))
		if _, err := l.Write(r.ctx, "debit", args); err != nil {
			return err
		}
		granted := l.Token()
		if _, err := r.ready("holding", nil); err != nil {
			return err
		}
		end := time.Now().Add(30 * time.Second)
		for l.Token() == granted && time.Now().Before(end) {
			time.Sleep(20 * time.Millisecond)
		}
		r.observe["resigned"] = l.Token() != granted
		r.observe["same_place"] = client.Unsigned(l.Token()) == client.Unsigned(granted)
		if _, err := r.ready("resigned", nil); err != nil {
			return err
		}
		_, err = l.Write(r.ctx, "debit", args)
		r.observe["write_after_retire"] = name(err)
		_, err = r.c.Write(r.ctx, granted, "debit", args)
		r.observe["granted_token"] = name(err)
		return nil
	}

	scenarios["watch-resume"] = func(r *run) error {
		ctx, cancel := context.WithCancel(r.ctx)
		defer cancel()
		events, err := r.c.Watch(ctx, r.str("resource"))
		if err != nil {
			return err
		}
		timeout := time.After(30 * time.Second)
		for synced := false; !synced; {
			select {
			case ev := <-events:
				synced = ev.Type == "synced"
			case <-timeout:
				return fmt.Errorf("no synced event in 30 s")
			}
		}
		if _, err := r.ready("synced", nil); err != nil {
			return err
		}
		types := []string{}
		r.observe["events"] = types
		timeout = time.After(30 * time.Second)
		for changes := 0; changes < int(r.num("changes")); {
			select {
			case ev, ok := <-events:
				if !ok {
					return fmt.Errorf("the watch ended")
				}
				types = append(types, ev.Type)
				r.observe["events"] = types
				switch ev.Type {
				case "relist":
					return nil
				case "state", "synced":
				default:
					changes++
				}
			case <-timeout:
				return nil
			}
		}
		return nil
	}

	scenarios["tls-bearer-file"] = func(r *run) error {
		opts := client.AcquireOptions{TTL: r.seconds("ttl")}
		l, err := r.c.Acquire(r.ctx, r.str("resource"), opts)
		if err != nil {
			return fmt.Errorf("with the certificate: %w", err)
		}
		_, err = l.Write(r.ctx, "debit", r.debit(1))
		r.observe["cert_write"] = name(err)
		_, err = l.Write(r.ctx, "open_account", map[string]any{"account": r.str("account")})
		r.observe["forbidden"] = name(err)
		if err := l.Release(r.ctx); err != nil {
			return err
		}
		bearerFile, _ := r.vars["bearer_file"].(string)
		c := newClient(r.gw, bearerFile)
		_, err = c.Acquire(r.ctx, r.str("resource"), opts)
		r.observe["expired_bearer"] = name(err)
		if _, err := r.ready("refused", nil); err != nil {
			return err
		}
		l, err = c.Acquire(r.ctx, r.str("resource"), opts)
		r.observe["after_rewrite"] = name(err)
		if err != nil {
			return nil
		}
		defer l.Release(r.ctx)
		_, err = l.Write(r.ctx, "debit", r.debit(1))
		r.observe["bearer_write"] = name(err)
		return nil
	}
}

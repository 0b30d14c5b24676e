package main

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/fencegw/fencegw/client"
)

// The scenarios of the lease loop.
func init() {
	scenarios["acquire-release"] = func(r *run) error {
		opts := client.AcquireOptions{TTL: r.seconds("ttl")}
		l, err := r.c.Acquire(r.ctx, r.str("resource"), opts)
		if err != nil {
			return err
		}
		_, err = l.Write(r.ctx, "debit", r.debit(r.num("amount_cents")))
		r.observe["write"] = name(err)
		if err := l.Release(r.ctx); err != nil {
			return err
		}
		again, err := r.c.Acquire(r.ctx, r.str("resource"), opts)
		r.observe["reacquire"] = name(err)
		if err != nil {
			return nil
		}
		r.observe["tokens"] = []string{client.Unsigned(l.Token()), client.Unsigned(again.Token())}
		return again.Release(r.ctx)
	}

	scenarios["acquire-answer-lost"] = func(r *run) error {
		l, err := r.c.Acquire(r.ctx, r.str("resource"), client.AcquireOptions{TTL: r.seconds("ttl")})
		r.observe["acquire"] = name(err)
		if err != nil {
			return nil
		}
		if _, err := r.ready("holding", map[string]any{"token": client.Unsigned(l.Token())}); err != nil {
			return err
		}
		return l.Release(r.ctx)
	}

	scenarios["fifo"] = func(r *run) error {
		n := int(r.num("waiters"))
		var (
			mu    sync.Mutex
			order []int
			errs  []error
			wg    sync.WaitGroup
		)
		for i := 1; i <= n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := r.c.Acquire(r.ctx, r.str("resource"), client.AcquireOptions{TTL: r.seconds("ttl"), Wait: r.seconds("wait")})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("waiter %d: %w", i, err))
					return
				}
				order = append(order, i)
				errs = append(errs, l.Release(r.ctx))
			}()
			if _, err := r.ready(fmt.Sprintf("waiter-%d", i), nil); err != nil {
				return err
			}
		}
		wg.Wait()
		r.observe["order"] = order
		return errors.Join(errs...)
	}

	scenarios["gc-pause"] = func(r *run) error {
		l, err := r.c.Acquire(r.ctx, r.str("resource"), client.AcquireOptions{TTL: r.seconds("ttl")})
		if err != nil {
			return err
		}
		defer l.Release(r.ctx)
		args := r.debit(r.num("amount_cents"))
		_, err = l.Write(r.ctx, "debit", args)
		r.observe["first_write"] = name(err)
		// The write prepared before the pause, past every local check.
		token := l.Token()
		if _, err := r.ready("paused", map[string]any{"token": client.Unsigned(token)}); err != nil {
			return err
		}
		_, err = r.c.Write(r.ctx, token, "debit", args)
		r.observe["stale_write"] = name(err)
		var stale *client.StaleTokenError
		if errors.As(err, &stale) {
			r.observe["current_token"] = stale.Current
		}
		r.observe["lost"] = waitDone(l)
		_, err = l.Write(r.ctx, "debit", args)
		r.observe["write_in_block"] = name(err)
		return nil
	}

	scenarios["keepalive-refused"] = func(r *run) error {
		l, err := r.c.Acquire(r.ctx, r.str("resource"), client.AcquireOptions{TTL: r.seconds("ttl")})
		if err != nil {
			return err
		}
		defer l.Release(r.ctx)
		if _, err := r.ready("holding", map[string]any{"lease_id": l.ID()}); err != nil {
			return err
		}
		lost := waitDone(l)
		r.observe["lost"] = lost
		r.observe["before_deadline"] = lost && time.Now().Before(l.Deadline())
		r.observe["reason"] = name(l.Err())
		_, err = l.Write(r.ctx, "debit", r.debit(1))
		r.observe["write_in_block"] = name(err)
		return nil
	}

	scenarios["slow-grant"] = func(r *run) error {
		before := time.Now()
		l, err := r.c.Acquire(r.ctx, r.str("resource"), client.AcquireOptions{TTL: r.seconds("ttl"), SafetyMargin: r.seconds("safety_margin")})
		if err != nil {
			return err
		}
		defer l.Release(r.ctx)
		r.observe["deadline_span"] = l.Deadline().Sub(before).Seconds()
		waitDone(l)
		r.observe["reason"] = name(l.Err())
		_, err = l.Write(r.ctx, "debit", r.debit(1))
		r.observe["write_in_block"] = name(err)
		return nil
	}

	scenarios["replica-killed"] = func(r *run) error {
		l, err := r.c.Acquire(r.ctx, r.str("resource"), client.AcquireOptions{TTL: r.seconds("ttl")})
		if err != nil {
			return err
		}
		defer l.Release(r.ctx)
		if _, err := l.Write(r.ctx, "debit", r.debit(r.num("amount_cents"))); err != nil {
			return fmt.Errorf("the write before the kill: %w", err)
		}
		if _, err := r.ready("holding", nil); err != nil {
			return err
		}
		var writes []string
		for range int(r.num("writes")) {
			_, err := l.Write(r.ctx, "debit", r.debit(r.num("amount_cents")))
			writes = append(writes, name(err))
		}
		renewed, last, end := 0, l.Deadline(), time.Now().Add(30*time.Second)
		for renewed < int(r.num("renewals")) && time.Now().Before(end) && l.Err() == nil {
			if d := l.Deadline(); !d.Equal(last) {
				renewed, last = renewed+1, d
			}
			time.Sleep(20 * time.Millisecond)
		}
		_, err = l.Write(r.ctx, "debit", r.debit(r.num("amount_cents")))
		r.observe["writes"] = append(writes, name(err))
		r.observe["renewed"] = renewed
		r.observe["lost"] = l.Err() != nil
		return nil
	}

	scenarios["semaphore"] = func(r *run) error {
		opts := client.AcquireOptions{TTL: r.seconds("ttl"), Permits: int(r.num("permits"))}
		a, err := r.c.Acquire(r.ctx, r.str("resource"), opts)
		if err != nil {
			return err
		}
		b, err := r.c.Acquire(r.ctx, r.str("resource"), opts)
		if err != nil {
			a.Release(r.ctx)
			return err
		}
		defer b.Release(r.ctx)
		permits := []int{a.Permit(), b.Permit()}
		slices.Sort(permits)
		r.observe["permits"] = permits
		_, err = r.c.Acquire(r.ctx, r.str("resource"), opts)
		r.observe["third"] = name(err)
		work := map[string]any{"pool": r.str("pool")}
		_, errA := a.Write(r.ctx, "work", work)
		_, errB := b.Write(r.ctx, "work", work)
		r.observe["writes"] = []string{name(errA), name(errB)}
		freed := a.Permit()
		if err := a.Release(r.ctx); err != nil {
			return err
		}
		c, err := r.c.Acquire(r.ctx, r.str("resource"), opts)
		r.observe["after_release"] = name(err)
		if err != nil {
			return nil
		}
		r.observe["reused_permit"] = c.Permit() == freed
		return c.Release(r.ctx)
	}

	scenarios["multi-lock"] = func(r *run) error {
		rs := r.strs("resources")
		opts := client.AcquireOptions{TTL: r.seconds("ttl")}
		_, err := r.c.AcquireAll(r.ctx, []string{r.str("held"), rs[0]}, opts)
		r.observe["refused"] = name(err)
		if _, err := r.ready("refused", nil); err != nil {
			return err
		}
		set, err := r.c.AcquireAll(r.ctx, rs, opts)
		if err != nil {
			return err
		}
		defer set.Release(r.ctx)
		roles := map[string]string{"from": "account/" + r.str("from"), "to": "account/" + r.str("to")}
		_, err = set.Write(r.ctx, "transfer", roles, map[string]any{"from": r.str("from"), "to": r.str("to"), "amount_cents": r.num("amount_cents")})
		r.observe["transfer"] = name(err)
		return nil
	}
}

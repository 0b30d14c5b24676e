package main

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/fencegw/fencegw/client"
)

// The scenarios of writes.
func init() {
	scenarios["commit-cut"] = func(r *run) error { return writeOnce(r, true) }
	scenarios["unavailable-retried"] = func(r *run) error { return writeOnce(r, false) }

	scenarios["batch"] = func(r *run) error {
		opts := client.AcquireOptions{TTL: r.seconds("ttl")}
		a, err := r.c.Acquire(r.ctx, "account/"+r.str("a"), opts)
		if err != nil {
			return err
		}
		defer a.Release(r.ctx)
		b, err := r.c.Acquire(r.ctx, "account/"+r.str("b"), opts)
		if err != nil {
			return err
		}
		defer b.Release(r.ctx)
		move := func(op string, l *client.Lease, account string, cents int) client.BatchWrite {
			return client.BatchWrite{Operation: op, Token: l.Token(), Args: map[string]any{"account": account, "amount_cents": cents}}
		}
		res, err := r.c.Batch(r.ctx, []client.BatchWrite{move("debit", a, r.str("a"), 5), move("credit", b, r.str("b"), 5)})
		r.observe["batch"] = name(err)
		if err == nil {
			r.observe["results"] = len(res.Writes)
		}
		_, err = r.c.Batch(r.ctx, []client.BatchWrite{move("debit", a, r.str("a"), 1), move("debit", b, r.str("b"), 99999999)})
		r.observe["refused"] = name(err)
		var p *client.ProblemError
		if errors.As(err, &p) {
			r.observe["index"] = p.Index
		}
		return nil
	}

	scenarios["read-check-deadline"] = func(r *run) error {
		opts := client.AcquireOptions{TTL: r.seconds("ttl")}
		l, err := r.c.Acquire(r.ctx, r.str("resource"), opts)
		if err != nil {
			return err
		}
		args := map[string]any{"account": r.str("account")}
		rr, err := l.Read(r.ctx, "balance", args)
		if err != nil {
			l.Release(r.ctx)
			return err
		}
		if rows := rowsOf(rr.Statements); len(rows) > 0 {
			r.observe["read_rows"], r.observe["read_balance"] = len(rows), rows[0]["balance_cents"]
		}
		r.observe["check"] = name(l.Check(r.ctx))
		_, err = l.Write(r.ctx, "debit", r.debit(1), client.WithNotAfter(time.Now().Add(-time.Minute)))
		r.observe["past_deadline"] = name(err)
		_, err = l.Write(r.ctx, "debit", r.debit(1), client.WithNotAfter(time.Now().Add(time.Hour)))
		r.observe["future_deadline"] = name(err)
		kept := l.Token()
		if err := l.Release(r.ctx); err != nil {
			return err
		}
		next, err := r.c.Acquire(r.ctx, r.str("resource"), opts)
		if err != nil {
			return err
		}
		defer next.Release(r.ctx)
		if _, err := next.Write(r.ctx, "debit", r.debit(1)); err != nil {
			return err
		}
		r.observe["stale_check"] = answerName(r.c.Check(r.ctx, kept, r.str("resource")))
		_, err = r.c.Read(r.ctx, kept, "balance", args)
		r.observe["stale_read"] = answerName(err)
		return nil
	}

	scenarios["problem-types-real"] = problemsMetForReal

	scenarios["problem-types-injected"] = func(r *run) error {
		got := map[string]string{}
		r.observe["got"] = got
		for _, c := range r.sc.Cases {
			if _, err := r.ready("inject", map[string]any{"case": c.Case}); err != nil {
				return err
			}
			got[c.Case] = answerName(r.c.Check(r.ctx, r.str("token"), r.str("resource")))
		}
		return nil
	}
}

// writeOnce holds the scenario's resource, says so, and writes its debit
// once: whatever the harness does to the answers, one result.
func writeOnce(r *run, replayed bool) error {
	l, err := r.c.Acquire(r.ctx, r.str("resource"), client.AcquireOptions{TTL: r.seconds("ttl")})
	if err != nil {
		return err
	}
	defer l.Release(r.ctx)
	if _, err := r.ready("holding", nil); err != nil {
		return err
	}
	res, err := l.Write(r.ctx, "debit", r.debit(r.num("amount_cents")))
	r.observe["write"] = name(err)
	if err != nil {
		return nil
	}
	if replayed {
		r.observe["replayed"] = res.Replayed
	}
	if rows := rowsOf(res.Statements); len(rows) > 0 {
		r.observe["balance"] = rows[0]["balance_cents"]
	}
	return nil
}

// rowsOf is the rows of the first statement of an answer.
func rowsOf(st []client.StatementResult) []map[string]any {
	var rows []map[string]any
	if len(st) > 0 {
		_ = json.Unmarshal(st[0].Rows, &rows)
	}
	return rows
}

// problemsMetForReal meets each refusal the gateway can be made to give
// a client, and counts the writes sent: none may be sent twice.
func problemsMetForReal(r *run) error {
	cases := map[string]string{}
	r.observe["cases"] = cases
	sent := 0
	opts := client.AcquireOptions{TTL: r.seconds("ttl")}
	first, err := r.c.Acquire(r.ctx, r.str("resource"), opts)
	if err != nil {
		return err
	}
	if err := first.Release(r.ctx); err != nil {
		return err
	}
	l, err := r.c.Acquire(r.ctx, r.str("resource"), opts)
	if err != nil {
		return err
	}
	write := func(op string, args any, o ...client.WriteOption) error {
		sent++
		_, err := l.Write(r.ctx, op, args, o...)
		return err
	}
	explicit := func(token string) error {
		sent++
		_, err := r.c.Write(r.ctx, token, "debit", r.debit(1))
		return err
	}
	if err := write("debit", r.debit(1)); err != nil {
		l.Release(r.ctx)
		return err
	}
	err = explicit(first.Token())
	cases["stale-token"] = name(err)
	var stale *client.StaleTokenError
	r.observe["stale_current"] = errors.As(err, &stale) && stale.Current == client.Unsigned(l.Token())
	cases["token-required"] = name(explicit(""))
	cases["bad-request"] = name(write("debit", r.debit(0)))
	cases["token-rejected"] = name(explicit(r.str("forged_token")))
	cases["unknown-operation"] = name(write("withdraw", r.debit(1)))
	cases["precondition-failed"] = name(write("debit", r.debit(99999999)))
	cases["constraint"] = name(write("open_account", map[string]any{"account": r.str("account")}))
	key := client.NewIdempotencyKey()
	if err := write("debit", r.debit(1), client.WithIdempotencyKey(key)); err != nil {
		l.Release(r.ctx)
		return err
	}
	cases["idempotency-mismatch"] = name(write("debit", r.debit(2), client.WithIdempotencyKey(key)))
	cases["deadline-passed"] = name(write("debit", r.debit(1), client.WithNotAfter(time.Now().Add(-time.Minute))))
	large := r.debit(1)
	large["pad"] = strings.Repeat("x", int(r.num("large_bytes")))
	cases["too-large"] = name(write("debit", large))
	_, err = r.c.Acquire(r.ctx, r.str("resource"), opts)
	cases["locked"] = name(err)
	if err := l.Release(r.ctx); err != nil {
		return err
	}
	_, err = r.c.Revoke(r.ctx, client.RevokeRequest{Resource: r.str("absent"), Reason: "conformance"})
	cases["no-lock"] = name(err)
	r.observe["writes_sent"] = sent
	return nil
}

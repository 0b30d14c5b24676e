package torture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/torture/check"
)

// transferRound takes the leases of two resources, in canonical order,
// and moves money between them, in either direction, with one write fenced
// on both. Each role is its own intent (X:from, X:to) on its resource, as
// the log has a row per role.
func (w *worker) transferRound(ctx context.Context, n int) {
	i := w.rnd.IntN(w.resources)
	j := (i + 1 + w.rnd.IntN(w.resources-1)) % w.resources
	from, to := fmt.Sprintf("r%d", i), fmt.Sprintf("r%d", j)
	lag := w.lag()
	set, err := w.pick().AcquireAll(ctx, []string{"res/" + from, "res/" + to}, client.AcquireOptions{TTL: w.ttl, Wait: 3 * w.ttl})
	if err != nil {
		time.Sleep(50 * time.Millisecond)
		return
	}
	defer set.Release(context.Background())
	w.step()
	w.readState(ctx, "res/"+from)
	w.step()
	w.suspendIfAsked()

	intent := fmt.Sprintf("w%d-%d-t", w.id, n)
	fromLease, toLease := set.Lease("res/"+from), set.Lease("res/"+to)
	fromToken, toToken := fromLease.Token(), toLease.Token()
	roles := [2]check.Event{
		{Worker: w.id, Intent: intent + ":from", Resource: "res/" + from, Token: client.Unsigned(fromToken), Lease: w.leaseView(fromLease, lag)},
		{Worker: w.id, Intent: intent + ":to", Resource: "res/" + to, Token: client.Unsigned(toToken), Lease: w.leaseView(toLease, lag)},
	}
	args := map[string]any{"from": from, "to": to, "intent": intent, "worker": w.id, "amount": 1 + w.rnd.IntN(100)}
	tokens := client.RoleTokens(map[string]string{"from": fromToken, "to": toToken})
	w.send(w.plan(w.pick()), func(ctx context.Context, c *client.Client) error {
		_, err := c.Write(ctx, tokens, "transfer", args, client.WithIdempotencyKey(intent))
		return err
	}, func(attempt int, a answer) {
		var stale *client.StaleTokenError
		for k, ev := range roles {
			if attempt > 1 {
				ev.Lease = check.LeaseView{} // said as the first attempt was sent
			}
			d := a.detail
			if errors.As(a.err, &stale) && stale.Role != [2]string{"from", "to"}[k] {
				// Refused for the other role's fence: this one's says nothing.
				d = "stale-token of the other role"
			}
			w.record(attemptEvent(ev, attempt, a), a.typ, d)
		}
	})
}

// write sends one op (an appendOp) to
// family/r with token, whatever view says of its lease, under its key
// (intent) with the attempts p plans.
func (w *worker) write(p retryPlan, op, token, resource, r, intent string, view check.LeaseView) {
	ev := check.Event{Worker: w.id, Intent: intent, Resource: resource, Token: historyToken(token), Lease: view}
	args := map[string]any{"r": r, "intent": intent, "worker": w.id}
	w.send(p, func(ctx context.Context, c *client.Client) error {
		_, err := c.Write(ctx, token, op, args, client.WithIdempotencyKey(intent))
		return err
	}, func(attempt int, a answer) {
		e := ev
		if attempt > 1 {
			e.Lease = check.LeaseView{} // said as the first attempt was sent
		}
		w.record(attemptEvent(e, attempt, a), a.typ, a.detail)
	})
}

// attemptEvent is ev as attempt's invoke or answer a records it.
func attemptEvent(ev check.Event, attempt int, a answer) check.Event {
	ev.Attempt, ev.Status, ev.Replayed, ev.Answer = attempt, a.status, a.replayed, a.digest
	return ev
}

// historyToken is token as the history records it, E:R: the rows
// record no permit, and a permit's slot is in the event's resource.
func historyToken(token string) string {
	t, _, _ := strings.Cut(client.Unsigned(token), "#")
	return t
}

// outcome sorts a write's answer: "ok", "fail" when the gateway says it
// applied nothing (a 4xx problem, or a 503 with outcome not-applied —
// which the checker holds it to), "info" when it may have (timeouts,
// broken connections, outcome unknown).
func outcome(err error) (string, string) {
	var p *client.ProblemError
	switch {
	case err == nil:
		return "ok", ""
	case errors.As(err, &p) && (p.Status >= 400 && p.Status < 500 || p.Outcome == "not-applied"):
		return "fail", p.Kind()
	}
	return "info", err.Error()
}

func (w *worker) record(ev check.Event, typ, detail string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// The history's times are the true time, whatever the leases' clock
	// says: the checker orders the workers' events by them.
	ev.Time, ev.Type, ev.Detail = time.Now(), typ, detail
	if typ != check.TypeInvoke {
		ev.Lease = check.LeaseView{} // said as the write was sent
	}
	if err := w.history.Encode(ev); err != nil {
		fmt.Fprintln(os.Stderr, "torture-worker: history:", err)
		os.Exit(1)
	}
}

// exists reports whether the file at path exists; an empty path never does.
func exists(path string) bool {
	if path == "" {
		return false
	}
	_, err := os.Stat(path)
	return err == nil
}

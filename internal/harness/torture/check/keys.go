package check

import (
	"fmt"
	"maps"
	"slices"
)

// The kinds of Violation about a write's answers under its idempotency
// key (the intent), which a worker retries, sometimes while an earlier
// attempt is still in flight, until an answer is final.
const (
	// KindAnswersDisagree: two final answers of one key differ — one
	// applied and one refused, two different refusals — or two attempts
	// were each answered 200 without Idempotent-Replayed: the write ran
	// twice.
	KindAnswersDisagree = "answers-disagree"
	// KindReplayDiffers: an answer marked Idempotent-Replayed is not the
	// key's first answer: another status or another body.
	KindReplayDiffers = "replay-differs"
)

// attemptOnly are the refusals that speak of one attempt, not of the key,
// as a history without statuses names them: an earlier attempt may still
// apply.
var attemptOnly = []string{"unavailable", "authority-halted"}

// finalRefusal reports whether e refuses its key for good: a 4xx answer,
// which the gateway makes the key's outcome (or decides on the request
// alone, the same for every attempt), so that no attempt with the key may
// apply after it. A 5xx — 503 not-applied among them — speaks of its
// attempt alone.
func (e Event) finalRefusal() bool {
	return e.Type == TypeFail && e.Status < 500 && !slices.Contains(attemptOnly, e.Detail)
}

// final reports whether e is a final answer of its key: applied, or
// refused for good.
func (e Event) final() bool { return e.Type == TypeOK || e.finalRefusal() }

// checkKeys holds each key's answers to one another: all its final
// answers agree, at most one attempt executed (a 200 not replayed), and
// every replayed answer is the key's first answer, byte for byte (its
// digest). That a key refused for good has no row is checkIntents'. It
// returns what the retries covered (Report.Retries), nil when no write
// was retried.
func (c *checker) checkKeys() map[string]int {
	stats := map[string]int{}
	for _, in := range slices.Sorted(maps.Keys(c.byIntent)) {
		var finals []Event
		var executed []Event
		open := map[int]bool{} // attempts invoked and not yet answered, in record order
		unknown, settled, retried := false, false, false
		for _, i := range c.byIntent[in] {
			e := c.history[i]
			if e.Type == TypeInvoke {
				if e.Attempt > 1 {
					stats["attempts-retried"]++
					retried = true
					if len(open) > 0 {
						stats["attempts-beside-one-in-flight"]++
					}
				}
				open[e.Attempt] = true
				continue
			}
			delete(open, e.Attempt)
			if e.Replayed {
				stats["answers-replayed"]++
			}
			if !e.final() {
				unknown = true
				continue
			}
			if unknown && !settled {
				stats["unknown-then-settled"]++
				settled = true
			}
			finals = append(finals, e)
			if e.Type == TypeOK && !e.Replayed {
				executed = append(executed, e)
			}
		}
		if retried {
			stats["writes-retried"]++
		}
		c.checkAnswers(in, finals, executed)
	}
	if len(stats) == 0 {
		return nil
	}
	return stats
}

// checkAnswers reports the ways one key's final answers (in the order the
// worker recorded them) disagree.
func (c *checker) checkAnswers(in string, finals, executed []Event) {
	if len(finals) == 0 {
		return
	}
	rows, first := c.rowsByIntent[in], finals[0]
	for _, e := range finals[1:] {
		if e.Type != first.Type || e.Status != first.Status || e.Detail != first.Detail {
			c.report(KindAnswersDisagree, first.Resource, rows, []string{in},
				"intent %s was answered %s%s, then %s%s: final answers of one key must agree",
				in, answerText(first), attemptText(first), answerText(e), attemptText(e))
			return
		}
	}
	if len(executed) > 1 {
		c.report(KindAnswersDisagree, first.Resource, rows, []string{in},
			"intent %s was answered 200 without Idempotent-Replayed by attempts %d and %d: its key ran twice", in, executed[0].Attempt, executed[1].Attempt)
		return
	}
	// The first answer is the one not replayed, where it came back; else
	// the replays are held to the earliest of them.
	orig := first
	if i := slices.IndexFunc(finals, func(e Event) bool { return !e.Replayed }); i >= 0 {
		orig = finals[i]
	}
	for _, e := range finals {
		if e.Replayed && e.Answer != "" && orig.Answer != "" && (e.Status != orig.Status || e.Answer != orig.Answer) {
			c.report(KindReplayDiffers, first.Resource, rows, []string{in},
				"intent %s's replayed answer (attempt %d: %d, body %s) is not its first (attempt %d: %d, body %s)",
				in, e.Attempt, e.Status, e.Answer, orig.Attempt, orig.Status, orig.Answer)
			return
		}
	}
}

// answerText names an answer for a message: "200", "409 stale-token".
func answerText(e Event) string {
	if e.Type == TypeOK {
		return "200 (applied)"
	}
	if e.Status == 0 {
		return e.Detail
	}
	return fmt.Sprintf("%d %s", e.Status, e.Detail)
}

// attemptText is " (attempt N)", or "" when the history does not number
// attempts.
func attemptText(e Event) string {
	if e.Attempt == 0 {
		return ""
	}
	return fmt.Sprintf(" (attempt %d)", e.Attempt)
}

package check

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencegw/fencegw/tokens"
)

// KindNotLinearizable: no order of a resource's fenced writes, each taking
// effect between its invoke and its answer, explains what the workers saw
// and what the database holds.
const KindNotLinearizable = "not-linearizable"

// linearizeTimeout bounds porcupine's search per resource: the check is
// NP-complete in general, and a run with many unknown outcomes could make
// it search for long. Running out of time is reported, not passed.
const linearizeTimeout = 30 * time.Second

// fencedWrite is one intent as an operation on the fenced register.
type fencedWrite struct {
	intent  string
	token   tokens.Token
	applied bool // the database holds its row
}

// fenceModel is the fence of one resource: a write is applied if and only
// if its token is not older than the fence (monotonic) or newer than it
// (strict), and then the fence is its token.
func fenceModel(strict bool) porcupine.Model {
	least := 0 // how far past the fence a token must be to write
	if strict {
		least = 1
	}
	return porcupine.Model{
		Init: func() any { return tokens.Token{} },
		Step: func(state, input, _ any) (bool, any) {
			fence, w := state.(tokens.Token), input.(fencedWrite)
			if w.applied {
				return w.token.Compare(fence) >= least, w.token
			}
			return w.token.Compare(fence) < least, fence
		},
		DescribeOperation: describeWrite,
	}
}

func describeWrite(input, _ any) string {
	w := input.(fencedWrite)
	if w.applied {
		return fmt.Sprintf("%s applied %s", w.intent, w.token)
	}
	return fmt.Sprintf("%s refused %s", w.intent, w.token)
}

// checkLinearizable checks each resource's fenced writes with porcupine.
// Whether a write was applied is the database's word (its row), which also
// settles unknown outcomes; when it was applied, it took effect after its
// invoke and, if acknowledged, before its answer — an unanswered one may
// have landed any time later (a slow network delivers it late). A refusal
// enters the model only as "stale-token", the one answer that speaks about
// the fence: it must have met a newer token. Writes that were neither
// applied nor refused as stale never touched the fence and are left out.
// It returns "ok", "violated" or "unknown" (porcupine ran out of time).
func (c *checker) checkLinearizable() string {
	byResource := map[string][]porcupine.Operation{}
	for _, intent := range slices.Sorted(maps.Keys(c.byIntent)) {
		op, ok := c.operation(intent)
		if ok {
			res := c.history[c.byIntent[intent][0]].Resource
			byResource[res] = append(byResource[res], op)
		}
	}
	result := "ok"
	for _, res := range slices.Sorted(maps.Keys(byResource)) {
		switch porcupine.CheckOperationsTimeout(fenceModel(c.strict(res)), byResource[res], linearizeTimeout) {
		case porcupine.Illegal:
			result = "violated"
			c.report(KindNotLinearizable, res, nil, nil,
				"no order of the %d fenced writes of %s explains their answers and the database", len(byResource[res]), res)
		case porcupine.Unknown:
			if result == "ok" {
				result = "unknown"
			}
		}
	}
	return result
}

// operation turns one intent into a register operation, if it is one.
// Its attempts under the key are one operation: called at the first
// invoke, returned at the first answer that says what became of it (an
// acknowledgement, replayed or not, or a stale-token refusal).
func (c *checker) operation(intent string) (porcupine.Operation, bool) {
	var invoke, acked, stale *Event
	for _, i := range c.byIntent[intent] {
		switch e := &c.history[i]; {
		case e.Type == TypeInvoke && invoke == nil:
			invoke = e
		case e.Type == TypeOK && acked == nil:
			acked = e
		case e.Type == TypeFail && e.Detail == "stale-token" && stale == nil:
			stale = e
		}
	}
	if invoke == nil {
		return porcupine.Operation{}, false // unknown-intent reports it
	}
	tok, err := tokens.Parse(invoke.Token)
	if err != nil {
		return porcupine.Operation{}, false
	}
	w := fencedWrite{intent: intent, token: tok}
	if rows := c.rowsByIntent[intent]; len(rows) > 0 {
		// Applied: the token is the one its row carries (the same, unless
		// something is badly wrong, which the other checks report).
		w.applied, w.token = true, tokens.Token{Epoch: rows[0].Epoch, Revision: rows[0].Revision}
	}
	ret := int64(math.MaxInt64)
	switch {
	case w.applied && acked != nil:
		ret = acked.Time.UnixNano()
	case w.applied:
		// Unanswered: it may have landed after the worker gave up.
	case stale != nil:
		ret = stale.Time.UnixNano()
	default:
		return porcupine.Operation{}, false
	}
	return porcupine.Operation{
		ClientId: invoke.Worker,
		Input:    w,
		Call:     invoke.Time.UnixNano(),
		Output:   w.applied,
		Return:   max(ret, invoke.Time.UnixNano()), // clocks of two processes may disagree a little
	}, true
}

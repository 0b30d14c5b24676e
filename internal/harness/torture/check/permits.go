package check

import (
	"cmp"
	"maps"
	"slices"
)

// KindTooManyHolders: more holders of a semaphore's permits wrote at
// once than it has permits.
const KindTooManyHolders = "too-many-holders"

// checkPermits checks that at most N holders of a semaphore of N permits
// write at once. A holder is a (slot, token): its rows lie under its
// slot's resource, and it writes from its first row to its last. Row IDs
// are commit order within one slot (the slot's fence row lock), and the
// stale-write check holds each slot's holders to one after another: with
// no stale write in a slot, its holders' spans of IDs do not overlap, so
// the semaphore's N slots hold at most N spans over any ID. More spans
// over one ID than permits is holders that wrote at once in one slot:
// the paused holder whose late write the slot's fence should have
// refused.
func (c *checker) checkPermits() {
	if c.permits == nil {
		return
	}
	type span struct {
		first, last Row
	}
	spans := map[string]map[string]*span{} // semaphore -> resource + token -> span
	sizes := map[string]int{}
	for res, rows := range c.byResource {
		sem, n := c.permits(res)
		if n == 0 {
			continue
		}
		sizes[sem] = n
		if spans[sem] == nil {
			spans[sem] = map[string]*span{}
		}
		for _, r := range rows { // ascending ID
			key := res + " " + r.token()
			if s := spans[sem][key]; s != nil {
				s.last = r
			} else {
				spans[sem][key] = &span{first: r, last: r}
			}
		}
	}
	for _, sem := range slices.Sorted(maps.Keys(spans)) {
		// Sweep the spans' ends in ID order: a span opens at its first
		// row and closes after its last.
		type edge struct {
			id   int64
			open bool
			s    *span
		}
		var edges []edge
		for _, s := range spans[sem] {
			edges = append(edges, edge{s.first.ID, true, s}, edge{s.last.ID, false, s})
		}
		slices.SortFunc(edges, func(a, b edge) int {
			// At one ID a span opens before another closes: a one-row
			// span is open at its row.
			if d := cmp.Compare(a.id, b.id); d != 0 {
				return d
			}
			if a.open == b.open {
				return 0
			}
			if a.open {
				return -1
			}
			return 1
		})
		open := map[*span]bool{}
		for _, e := range edges {
			if !e.open {
				delete(open, e.s)
				continue
			}
			open[e.s] = true
			if len(open) <= sizes[sem] {
				continue
			}
			var rows []Row
			var intents []string
			for s := range open {
				rows = append(rows, s.first, s.last)
				intents = append(intents, s.first.Intent, s.last.Intent)
			}
			slices.SortFunc(rows, func(a, b Row) int { return cmp.Compare(a.ID, b.ID) })
			rows = slices.CompactFunc(rows, func(a, b Row) bool { return a.ID == b.ID })
			c.report(KindTooManyHolders, sem, rows, intents,
				"%d holders of %s's %d permits wrote at once around row %d (intent %s, worker %d, token %s)",
				len(open), sem, sizes[sem], e.id, e.s.first.Intent, e.s.first.Worker, e.s.first.token())
			break // one report per semaphore: the rest follow from it
		}
	}
}

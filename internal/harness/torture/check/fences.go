package check

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// The kinds of Violation about the fences themselves, as read from
// fencegw.fences: every other check infers a fence from the log's rows;
// these hold the row PostgreSQL actually refuses stale tokens by.
const (
	// KindFenceBelowApplied: a resource's fence is below a token applied
	// to it in the same snapshot. The next write with a token between the
	// two would be let in after a newer one landed.
	KindFenceBelowApplied = "fence-below-applied"
	// KindFenceBelowAcknowledged: a resource's fence, read after a write
	// to it was acknowledged, is below that write's token: the fence went
	// back (a failover that lost the commit), so an older holder may write
	// again.
	KindFenceBelowAcknowledged = "fence-below-acknowledged"
)

// FenceReading is what PostgreSQL held at one moment: each resource's
// fence and, in the same snapshot, the highest token applied to each
// resource.
type FenceReading struct {
	// Label says when: "the end", "after failover 2".
	Label string
	// At is a reading of the workers' clock taken before the snapshot:
	// a write acknowledged before At had committed before the snapshot.
	At time.Time
	// Fences are fencegw.fences' rows (E:R), by resource. Floor is the
	// fence floor, the fence of every resource without a row (pruned ones).
	Fences map[string]tokens.Token
	Floor  tokens.Token
	// Applied is the highest token of each resource's rows in the log.
	Applied map[string]tokens.Token
}

// fence is resource's fence in r: its row, or the floor where the row is
// missing or below it.
func (r FenceReading) fence(resource string) tokens.Token {
	f, ok := r.Fences[resource]
	if !ok || f.Compare(r.Floor) < 0 {
		return r.Floor
	}
	return f
}

// checkFences holds every reading's fences to what had been applied and
// acknowledged by then: a fence is at or above the highest token applied
// to its resource, and at or above the token of every write to it
// acknowledged before the reading.
func (c *checker) checkFences(readings []FenceReading) {
	acks := map[string][]ack{} // by resource
	for _, e := range c.history {
		if e.Type != TypeOK {
			continue
		}
		if epoch, rev, ok := parseToken(e.Token); ok {
			acks[e.Resource] = append(acks[e.Resource], ack{e.Intent, epoch, rev, e.Time})
		}
	}
	for _, r := range readings {
		for _, res := range slices.Sorted(maps.Keys(r.Applied)) {
			if applied, fence := r.Applied[res], r.fence(res); fence.Compare(applied) < 0 {
				c.report(KindFenceBelowApplied, res, c.rowsOf(res, applied), nil,
					"at %s the fence of %s is %s, below the token %s applied to it", r.Label, res, fence, applied)
			}
		}
		for _, res := range slices.Sorted(maps.Keys(acks)) {
			fence := r.fence(res)
			var worst *ack
			for i, a := range acks[res] {
				tok := tokens.Token{Epoch: a.epoch, Revision: a.rev}
				if a.acknowledged.Before(r.At) && fence.Compare(tok) < 0 &&
					(worst == nil || tok.Compare(tokens.Token{Epoch: worst.epoch, Revision: worst.rev}) > 0) {
					worst = &acks[res][i]
				}
			}
			if worst != nil {
				c.report(KindFenceBelowAcknowledged, res, c.rowsByIntent[worst.intent], []string{worst.intent},
					"at %s the fence of %s is %s, below the token %d:%d of intent %s, acknowledged before", r.Label, res, fence, worst.epoch, worst.rev, worst.intent)
			}
		}
	}
}

// rowsOf are resource's rows with token tok.
func (c *checker) rowsOf(resource string, tok tokens.Token) []Row {
	var rows []Row
	for _, r := range c.byResource[resource] {
		if r.Epoch == tok.Epoch && r.Revision == tok.Revision {
			rows = append(rows, r)
		}
	}
	return rows
}

// fenceReads names the readings, for the report.
func fenceReads(readings []FenceReading) string {
	labels := make([]string, len(readings))
	for i, r := range readings {
		labels[i] = r.Label
	}
	return strings.Join(labels, ", ")
}

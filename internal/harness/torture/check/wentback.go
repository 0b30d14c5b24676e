package check

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// KindFenceWentBack is a write applied with a token older than one
// already acknowledged for its resource: the fence went back, as it does
// when a database loses acknowledged commits (an asynchronous standby
// promoted). checkStale cannot see it, since the acknowledged write's row
// is gone too.
const KindFenceWentBack = "fence-went-back"

// ack is one acknowledged write: its token and when its answer came.
type ack struct {
	intent       string
	epoch, rev   int64
	acknowledged time.Time
}

// checkWentBack reports each applied row whose write was sent after a
// write with a newer token (on a strict resource: the same token, another
// write) on the same resource had been acknowledged, and that
// acknowledged write is not in the database.
// Both times are wall-clock readings of one machine's workers: the
// acknowledgement is taken after the answer arrived and the invoke before
// the request left, so the order they show is the real one.
func (c *checker) checkWentBack() {
	acks := map[string][]ack{} // by resource
	for _, e := range c.history {
		if e.Type != TypeOK {
			continue
		}
		if epoch, rev, ok := parseToken(e.Token); ok {
			acks[e.Resource] = append(acks[e.Resource], ack{e.Intent, epoch, rev, e.Time})
		}
	}
	for _, res := range slices.Sorted(maps.Keys(c.byResource)) {
		for _, r := range c.byResource[res] {
			sent, ok := c.invoked(r.Intent)
			if !ok {
				continue
			}
			strict := c.strict(res)
			for _, a := range acks[res] {
				newer := a.epoch > r.Epoch || a.epoch == r.Epoch && (a.rev > r.Revision || strict && a.rev == r.Revision && a.intent != r.Intent)
				// Only where the acknowledged write is gone: where it is
				// in the database, checkStale already reports the row.
				if newer && a.acknowledged.Before(sent) && len(c.rowsByIntent[a.intent]) == 0 {
					c.report(KindFenceWentBack, res, []Row{r}, []string{a.intent, r.Intent},
						"row %d (intent %s, worker %d) applied token %s, sent after intent %s with the newer token %d:%d was acknowledged; that write is not in the database",
						r.ID, r.Intent, r.Worker, r.token(), a.intent, a.epoch, a.rev)
					break
				}
			}
		}
	}
}

// invoked is when the write of intent (a transfer's row: the transfer's)
// was sent, if the history says.
func (c *checker) invoked(intent string) (time.Time, bool) {
	for _, in := range []string{intent, strings.TrimSuffix(strings.TrimSuffix(intent, ":from"), ":to")} {
		for _, i := range c.byIntent[in] {
			if c.history[i].Type == TypeInvoke {
				return c.history[i].Time, true
			}
		}
	}
	return time.Time{}, false
}

// parseToken reads E:R from a token as workers record it, signature
// (E:R:SIGNATURE) or not.
func parseToken(s string) (epoch, rev int64, ok bool) {
	e, r, found := strings.Cut(s, ":")
	if !found {
		return 0, 0, false
	}
	r, _, _ = strings.Cut(r, ":")
	epoch, err1 := strconv.ParseInt(e, 10, 64)
	rev, err2 := strconv.ParseInt(r, 10, 64)
	return epoch, rev, err1 == nil && err2 == nil
}

package check

import (
	"maps"
	"slices"
)

// KindTokenReused: two writes applied to one lease-churn resource with
// one token, each another lease's (another intent): every lease there
// writes once, so one token in two writes is two holders with one token,
// which the fence cannot tell apart. A token lower than one applied
// before it is a stale write (checkStale), on these resources as on any.
const KindTokenReused = "token-reused"

// checkChurn holds the lease-churn resources' rows, in commit order, to
// strictly increasing tokens: a token lower than the highest before it is
// checkStale's, one equal to it of another intent is reported here. It
// returns what the churn did (Report.Churn), nil when no resource is a
// churn one.
func (c *checker) checkChurn(churn func(resource string) bool, grants []Grant) map[string]int {
	if churn == nil {
		return nil
	}
	stats := map[string]int{}
	for _, res := range slices.Sorted(maps.Keys(c.byResource)) {
		if !churn(res) {
			continue
		}
		stats["resources-written"]++
		rows := c.byResource[res]
		stats["writes-applied"] += len(rows)
		for i, high := 1, rows[0]; i < len(rows); i++ {
			switch r := rows[i]; compareTokens(r, high) {
			case 0:
				if r.Intent != high.Intent {
					c.report(KindTokenReused, res, []Row{high, r}, []string{high.Intent, r.Intent},
						"row %d (intent %s, worker %d) wrote token %s, which row %d (intent %s, worker %d) had written: two leases' writes with one token",
						r.ID, r.Intent, r.Worker, r.token(), high.ID, high.Intent, high.Worker)
				}
			case 1:
				high = r
			}
		}
	}
	for _, in := range slices.Sorted(maps.Keys(c.byIntent)) {
		for _, i := range c.byIntent[in] {
			if e := c.history[i]; churn(e.Resource) && e.Type == TypeFail && e.Detail == "stale-token" {
				stats["writes-refused-stale"]++
				break
			}
		}
	}
	for _, g := range grants {
		if churn(g.Resource) {
			stats["grants"]++
			if name, ok := endStats[g.End]; ok {
				stats[name]++
			}
		}
	}
	return stats
}

// endStats name the ways a holder meant to let its lease go in
// Report.Churn.
var endStats = map[string]string{
	GrantEndRelease: "leases-released",
	GrantEndExpire:  "leases-left-to-expire",
	GrantEndPause:   "holders-paused-past-ttl",
}

package check

import (
	"maps"
	"slices"
)

// KindTokenReused: two holders' writes applied to one lease-churn
// resource with one token. A token is one lease's, and a lease one
// holder's: one token written by two workers is two holders given one
// token, which the fence cannot tell apart. (One holder may write twice
// with its token: the nemesis's successor retries without a key.) A
// token lower than one applied before it is a stale write (checkStale),
// on these resources as on any.
const KindTokenReused = "token-reused"

// checkChurn holds the lease-churn resources' rows, in commit order, to
// strictly increasing tokens from one holder to the next: a token lower
// than the highest before it is checkStale's, one equal to it of another
// worker is reported here. It
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
				if r.Worker != high.Worker {
					c.report(KindTokenReused, res, []Row{high, r}, []string{high.Intent, r.Intent},
						"row %d (intent %s, worker %d) wrote token %s, which row %d (intent %s, worker %d) had written: two holders with one token",
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

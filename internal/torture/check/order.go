package check

import (
	"maps"
	"slices"
)

// checkOrder runs the checks on each resource's rows in commit order:
// stale-write, then interleaved-holders for the rows stale-write left alone.
func (c *checker) checkOrder() {
	for _, res := range slices.Sorted(maps.Keys(c.byResource)) {
		rows := c.byResource[res]
		stale := c.checkStale(res, rows)
		c.checkInterleaved(res, rows, stale)
	}
}

// checkStale reports each row whose token is lower than the highest token
// committed before it on the same resource: the fence let an older holder
// write after a newer one. It returns the IDs of the rows it reported.
func (c *checker) checkStale(res string, rows []Row) map[int64]bool {
	stale := map[int64]bool{}
	for i, high := 1, rows[0]; i < len(rows); i++ {
		r := rows[i]
		switch d := compareTokens(r, high); {
		case d < 0:
			stale[r.ID] = true
			c.report(KindStaleWrite, res, []Row{high, r}, []string{high.Intent, r.Intent},
				"row %d (intent %s, worker %d) wrote token %s after row %d (intent %s, worker %d) wrote %s",
				r.ID, r.Intent, r.Worker, r.token(), high.ID, high.Intent, high.Worker, high.token())
		case d > 0:
			high = r
		}
	}
	return stale
}

// checkInterleaved reports a row whose token's run of rows had already
// ended: one holder's writes resumed after another holder's, so the two
// held the resource at once. Stale rows are left out altogether — they are
// reported already, and must not end the run of the holder they cut into
// (5, 7, 5-stale, 7 is one stale write, not also an interleaving of 7).
func (c *checker) checkInterleaved(res string, all []Row, stale map[int64]bool) {
	rows := slices.DeleteFunc(slices.Clone(all), func(r Row) bool { return stale[r.ID] })
	ended := map[string]int{} // token -> index of the last row of its ended run
	for i := 1; i < len(rows); i++ {
		prev, r := rows[i-1], rows[i]
		if compareTokens(prev, r) == 0 {
			continue
		}
		ended[prev.token()] = i - 1
		last, ok := ended[r.token()]
		delete(ended, r.token())
		if !ok {
			continue
		}
		between := rows[last+1]
		c.report(KindInterleavedHolders, res, []Row{rows[last], between, r}, []string{rows[last].Intent, between.Intent, r.Intent},
			"row %d (intent %s, worker %d) wrote token %s after row %d wrote %s, but %s's writes had ended at row %d: two holders interleaved",
			r.ID, r.Intent, r.Worker, r.token(), between.ID, between.token(), r.token(), rows[last].ID)
	}
}

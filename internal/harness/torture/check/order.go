package check

import (
	"maps"
	"slices"
)

// checkOrder checks each resource's rows in commit order for stale writes.
//
// That one check also covers "at most one holder's writes land between two
// fence advances": tokens are totally ordered, so once the stale rows are
// set aside the rest never decrease, and each token's rows are contiguous.
// A second check for interleaved holders could only ever report a stale
// write again.
func (c *checker) checkOrder() {
	for _, res := range slices.Sorted(maps.Keys(c.byResource)) {
		c.checkStale(res, c.byResource[res])
	}
}

// checkStale reports each row whose token is lower than the highest token
// committed before it on the same resource: the fence let an older holder
// write after a newer one. On a strict resource a token writes once, so a
// row with the token of an earlier row is stale too.
func (c *checker) checkStale(res string, rows []Row) {
	strict := c.strict(res)
	for i, high := 1, rows[0]; i < len(rows); i++ {
		r := rows[i]
		switch d := compareTokens(r, high); {
		case d < 0, d == 0 && strict:
			c.report(KindStaleWrite, res, []Row{high, r}, []string{high.Intent, r.Intent},
				"row %d (intent %s, worker %d) wrote token %s after row %d (intent %s, worker %d) wrote %s",
				r.ID, r.Intent, r.Worker, r.token(), high.ID, high.Intent, high.Worker, high.token())
		case d > 0:
			high = r
		}
	}
}

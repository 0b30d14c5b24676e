package bench

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a writeFunc that notes the accounts it was asked to write
// and fails those fail says.
type recorder struct {
	mu   sync.Mutex
	ids  []int64
	fail func(id int64) bool
}

func (r *recorder) write(_ context.Context, id int64) (string, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, id)
	if r.fail != nil && r.fail(id) {
		return "409 stale-token", "refused on purpose"
	}
	return "", ""
}

// TestOverheadPathsWriteTheSameAccounts: the direct path (called once for
// itself and once through the HTTP floor) and the gateway path are asked
// for the same accounts in the same order; a failed write is counted and
// makes the cell invalid, and the report says so.
func TestOverheadPathsWriteTheSameAccounts(t *testing.T) {
	var direct, gw recorder
	o, err := measureOverhead(t.Context(), Zipf, window{duration: time.Millisecond, minWrites: 2 * overheadRun}, direct.write, gw.write, sameToken("1:1"), operationName)
	if err != nil {
		t.Fatal(err)
	}
	if o.PerPath < 2*overheadRun || o.ErrorCount() != 0 || o.Acknowledged != int64(len(direct.ids)+len(gw.ids)) {
		t.Fatalf("overhead %+v after %d direct and %d gateway writes", o, len(direct.ids), len(gw.ids))
	}
	// The direct writer serves the direct path and the floor: each
	// account comes to it twice as often as to the gateway.
	count := func(ids []int64) map[int64]int {
		m := map[int64]int{}
		for _, id := range ids {
			m[id]++
		}
		return m
	}
	d, g := count(direct.ids), count(gw.ids)
	for id, n := range g {
		if d[id] != 2*n {
			t.Fatalf("account %d: %d direct and floor writes, %d gateway writes; want twice as many", id, d[id], n)
		}
	}
	if !slices.Equal(gw.ids[:overheadRun], firstPicks(Zipf, overheadRun)) {
		t.Errorf("the gateway's first accounts %v, not the picker's", gw.ids[:overheadRun])
	}

	failing := recorder{fail: func(id int64) bool { return true }}
	o, err = measureOverhead(t.Context(), Uniform, window{duration: time.Millisecond, minWrites: 1}, direct.write, failing.write, sameToken("1:1"), operationName)
	if err != nil {
		t.Fatal(err)
	}
	cell := Cell{Clients: 1, Dist: Uniform, Direct: Path{Writes: 1}, Gateway: Path{Writes: 1}, Overhead: &o}
	if o.ErrorCount() == 0 || cell.Valid() || !strings.Contains(errorCell(cell), "overhead") || !strings.Contains(o.FirstError, "gateway") {
		t.Fatalf("a failing gateway path: overhead %+v, valid %v, table says %q", o, cell.Valid(), errorCell(cell))
	}
}

// firstPicks is what a path's picker gives first.
func firstPicks(d Dist, n int) []int64 {
	next := overheadPicker(d)
	out := make([]int64, n)
	for i := range out {
		out[i] = next()
	}
	return out
}

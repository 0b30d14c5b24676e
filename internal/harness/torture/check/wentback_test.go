package check

import (
	"slices"
	"testing"
)

// TestFenceWentBack: a write acknowledged with token 1:12 is lost, and a
// write with 1:10 sent after that acknowledgement is applied: the fence
// went back. The same older write sent before the acknowledgement, or with
// the acknowledged write still in the database (then it is a stale write),
// is not this violation.
func TestFenceWentBack(t *testing.T) {
	kinds := func(r Report) []string {
		var out []string
		for _, v := range r.Violations {
			out = append(out, v.Kind)
		}
		slices.Sort(out)
		return out
	}
	// b (1:12, signed as a lease grants it) acknowledged at second 1; a
	// (1:10) sent at second 4.
	history := concat(write(0, 2, TypeOK, "b", "r", "1:12:pnZrL7e1XcBdo1demkgKww"), write(4, 1, TypeOK, "a", "r", "1:10"))
	got := Check(Input{History: history, Rows: []Row{row(1, "r", 1, 10, "a", 1)}})
	// porcupine takes the database's word that b was not applied.
	if want := []string{KindFenceWentBack, KindLostWrite}; !slices.Equal(kinds(got), want) {
		t.Errorf("acknowledged 1:12 lost, 1:10 applied after it: %v, want %v", kinds(got), want)
	}
	// a sent before b was acknowledged: only the loss.
	history = concat(write(0, 1, TypeOK, "a", "r", "1:10"), write(0, 2, TypeOK, "b", "r", "1:12"))
	got = Check(Input{History: history, Rows: []Row{row(1, "r", 1, 10, "a", 1)}})
	if want := []string{KindLostWrite}; !slices.Equal(kinds(got), want) {
		t.Errorf("1:10 sent before 1:12 was acknowledged: %v, want %v", kinds(got), want)
	}
}

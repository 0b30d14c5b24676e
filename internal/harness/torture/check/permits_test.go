package check

import (
	"slices"
	"strings"
	"testing"
)

// TestPermits: a semaphore of 2 permits whose slots pass from holder to
// holder has at most 2 writers at once; a paused holder of slot 1 whose
// late write lands after its successor's (fencing off: the control) makes
// 3, and the checker says so beside the stale write in the slot.
func TestPermits(t *testing.T) {
	permits := func(res string) (string, int) {
		if sem, _, ok := strings.Cut(res, "#"); ok && strings.HasPrefix(res, "sem/") {
			return sem, 2
		}
		return "", 0
	}
	history := concat(
		write(0, 1, TypeOK, "a1", "sem/a#1", "1:10"), write(0, 2, TypeOK, "b1", "sem/a#2", "1:11"),
		write(2, 1, TypeOK, "a2", "sem/a#1", "1:10"), write(2, 2, TypeOK, "b2", "sem/a#2", "1:11"),
		write(4, 3, TypeOK, "c1", "sem/a#1", "1:20"),
	)
	fenced := []Row{
		row(1, "sem/a#1", 1, 10, "a1", 1), row(2, "sem/a#2", 1, 11, "b1", 2),
		row(3, "sem/a#1", 1, 10, "a2", 1), row(4, "sem/a#2", 1, 11, "b2", 2),
		row(5, "sem/a#1", 1, 20, "c1", 3),
	}
	// The control: a2, the paused holder's, lands after c1 in its slot.
	control := []Row{
		row(1, "sem/a#1", 1, 10, "a1", 1), row(2, "sem/a#2", 1, 11, "b1", 2),
		row(3, "sem/a#1", 1, 20, "c1", 3), row(4, "sem/a#2", 1, 11, "b2", 2),
		row(5, "sem/a#1", 1, 10, "a2", 1),
	}
	tests := []struct {
		name string
		rows []Row
		want []found
	}{
		{"slots passed on", fenced, []found{}},
		{"a paused holder's late write", control, []found{{KindStaleWrite, "sem/a#1", "3,5"}, {KindTooManyHolders, "sem/a", "1,2,3,4,5"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(Input{History: history, Rows: tt.rows, Permits: permits})
			if kinds := summarizeKinds(got.Violations, KindStaleWrite, KindTooManyHolders); !slices.Equal(kinds, tt.want) {
				t.Fatalf("violations %+v, want %+v", kinds, tt.want)
			}
		})
	}
	// Without permits the same rows are two resources' own business.
	got := Check(Input{History: history, Rows: control})
	if slices.ContainsFunc(got.Violations, func(v Violation) bool { return v.Kind == KindTooManyHolders }) {
		t.Errorf("too-many-holders reported with no semaphore declared: %+v", got.Violations)
	}
}

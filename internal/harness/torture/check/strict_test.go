package check

import (
	"slices"
	"testing"
)

// TestStrictResource: on a strict resource a token writes once, so a
// second row with the token of an earlier one is a stale write, a refusal
// of an equal token is explained, and an equal token applied after one was
// acknowledged and lost means the fence went back. The same rows on a
// monotonic resource are fine.
func TestStrictResource(t *testing.T) {
	strict := func(res string) bool { return res == "strict/s" }
	tests := []struct {
		name    string
		history []Event
		rows    []Row
		want    []found
	}{
		{
			name:    "two writes with one token on a strict resource",
			history: concat(write(0, 1, TypeOK, "a1", "strict/s", "1:10"), write(2, 1, TypeOK, "a2", "strict/s", "1:10")),
			rows:    []Row{row(1, "strict/s", 1, 10, "a1", 1), row(2, "strict/s", 1, 10, "a2", 1)},
			want:    []found{{KindNotLinearizable, "strict/s", ""}, {KindStaleWrite, "strict/s", "1,2"}},
		},
		{
			name:    "the same on a monotonic resource",
			history: concat(write(0, 1, TypeOK, "a1", "res/r", "1:10"), write(2, 1, TypeOK, "a2", "res/r", "1:10")),
			rows:    []Row{row(1, "res/r", 1, 10, "a1", 1), row(2, "res/r", 1, 10, "a2", 1)},
			want:    []found{},
		},
		{
			name:    "an equal token refused as stale on a strict resource",
			history: concat(write(0, 1, TypeOK, "a1", "strict/s", "1:10"), refused(2, 1, "a2", "strict/s", "1:10")),
			rows:    []Row{row(1, "strict/s", 1, 10, "a1", 1)},
			want:    []found{},
		},
		{
			name:    "an equal token refused as stale on a monotonic resource",
			history: concat(write(0, 1, TypeOK, "a1", "res/r", "1:10"), refused(2, 1, "a2", "res/r", "1:10")),
			rows:    []Row{row(1, "res/r", 1, 10, "a1", 1)},
			want:    []found{{KindNotLinearizable, "res/r", ""}},
		},
		{
			name:    "an acknowledged write lost, then its token's other write applied",
			history: concat(write(0, 1, TypeOK, "a1", "strict/s", "1:10"), write(4, 1, TypeOK, "a2", "strict/s", "1:10")),
			rows:    []Row{row(1, "strict/s", 1, 10, "a2", 1)},
			want:    []found{{KindFenceWentBack, "strict/s", "1"}, {KindLostWrite, "strict/s", ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(Input{History: tt.history, Rows: tt.rows, Strict: strict})
			if g := summarize(got.Violations); !slices.Equal(g, tt.want) {
				t.Errorf("violations = %+v, want %+v", g, tt.want)
				for _, v := range got.Violations {
					t.Logf("%s: %s", v.Kind, v.Message)
				}
			}
		})
	}
}

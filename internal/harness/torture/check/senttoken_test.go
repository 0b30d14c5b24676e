package check

import (
	"slices"
	"testing"
)

// TestWrongToken: a row must carry a token its intent was sent with. A
// coalesced transaction that bound one write's statements to its neighbour's
// token, or a transfer whose roles' tokens were swapped, passed every
// other check when the tokens happened to be in order; this one finds
// them. A retry sent with either token, and an intent whose history has
// no readable token, are not held against the row.
func TestWrongToken(t *testing.T) {
	tests := []struct {
		name    string
		history []Event
		rows    []Row
		want    []found
	}{
		{
			name:    "the token it was sent with",
			history: write(0, 1, TypeOK, "a", "r", "1:10:c2lnbmVk"),
			rows:    []Row{row(1, "r", 1, 10, "a", 1)},
			want:    []found{},
		},
		{
			name: "a neighbour's newer token, in order",
			history: concat(
				write(0, 1, TypeOK, "a", "r", "1:10"),
				write(0, 2, TypeOK, "b", "r", "1:12"),
			),
			rows: []Row{row(1, "r", 1, 12, "a", 1), row(2, "r", 1, 12, "b", 2)},
			want: []found{{KindWrongToken, "r", "1"}},
		},
		{
			name: "a transfer's roles swapped",
			history: concat(
				write(0, 1, TypeOK, "t:from", "r", "1:10"),
				write(0, 1, TypeOK, "t:to", "s", "1:11"),
			),
			rows: []Row{row(1, "r", 1, 11, "t:from", 1), row(2, "s", 1, 10, "t:to", 1)},
			want: []found{{KindWrongToken, "r", "1"}, {KindWrongToken, "s", "2"}},
		},
		{
			name:    "a retry with a new token: either will do",
			history: concat(write(0, 1, TypeInfo, "a", "r", "1:10"), write(2, 1, TypeOK, "a", "r", "1:12")),
			rows:    []Row{row(1, "r", 1, 10, "a", 1)},
			want:    []found{},
		},
		{
			name:    "no readable token sent: nothing to hold the row to",
			history: write(0, 1, TypeOK, "a", "r", ""),
			rows:    []Row{row(1, "r", 1, 10, "a", 1)},
			want:    []found{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(Input{History: tt.history, Rows: tt.rows})
			var wrong []Violation
			for _, v := range got.Violations {
				if v.Kind == KindWrongToken {
					wrong = append(wrong, v)
				}
			}
			if g := summarize(wrong); !slices.Equal(g, tt.want) {
				t.Errorf("wrong-token violations = %+v, want %+v", g, tt.want)
				for _, v := range got.Violations {
					t.Logf("%s: %s", v.Kind, v.Message)
				}
			}
		})
	}
}

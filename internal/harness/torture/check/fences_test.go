package check

import (
	"slices"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

func tok(epoch, rev int64) tokens.Token { return tokens.Token{Epoch: epoch, Revision: rev} }

// TestCheckFences: a fence read from fencegw.fences (or the floor, for a
// resource whose row was pruned) must be at or above the highest token
// applied to its resource in the same snapshot, and at or above the token
// of every write to it acknowledged before the reading; each case that
// breaks one is found, and nothing else is.
func TestCheckFences(t *testing.T) {
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	history := concat(
		write(0, 1, TypeOK, "a", "r", "1:10"),
		write(2, 2, TypeOK, "b", "r", "1:12"),
	)
	rows := []Row{row(1, "r", 1, 10, "a", 1), row(2, "r", 1, 12, "b", 2)}
	tests := []struct {
		name     string
		history  []Event
		rows     []Row
		readings []FenceReading
		want     []found
	}{
		{
			name:    "clean: the fence is the newest applied token",
			history: history, rows: rows,
			readings: []FenceReading{{Label: "the end", At: at(9), Fences: map[string]tokens.Token{"r": tok(1, 12)}, Applied: map[string]tokens.Token{"r": tok(1, 12)}}},
			want:     []found{},
		},
		{
			name:    "clean: a newer epoch outranks any revision",
			history: concat(write(0, 1, TypeOK, "a", "r", "1:99")), rows: []Row{row(1, "r", 1, 99, "a", 1)},
			readings: []FenceReading{{Label: "the end", At: at(9), Fences: map[string]tokens.Token{"r": tok(2, 3)}, Applied: map[string]tokens.Token{"r": tok(1, 99)}}},
			want:     []found{},
		},
		{
			name:    "clean: a pruned row's resource is fenced by the floor",
			history: history, rows: rows,
			readings: []FenceReading{{Label: "the end", At: at(9), Fences: map[string]tokens.Token{}, Floor: tok(1, 20), Applied: map[string]tokens.Token{"r": tok(1, 12)}}},
			want:     []found{},
		},
		{
			name:    "clean: a write acknowledged after the reading is not held to it",
			history: history, rows: rows,
			readings: []FenceReading{{Label: "after failover 1", At: at(2), Fences: map[string]tokens.Token{"r": tok(1, 10)}, Applied: map[string]tokens.Token{"r": tok(1, 10)}}},
			want:     []found{},
		},
		{
			name:    "fence-below-applied: the fence row lags the log",
			history: history, rows: rows,
			readings: []FenceReading{{Label: "the end", At: at(9), Fences: map[string]tokens.Token{"r": tok(1, 10)}, Applied: map[string]tokens.Token{"r": tok(1, 12)}}},
			want:     []found{{KindFenceBelowAcknowledged, "r", "2"}, {KindFenceBelowApplied, "r", "2"}},
		},
		{
			name:    "fence-below-applied: no fence row, the floor below the rows",
			history: history, rows: rows,
			readings: []FenceReading{{Label: "the end", At: at(9), Fences: map[string]tokens.Token{}, Floor: tok(1, 0), Applied: map[string]tokens.Token{"r": tok(1, 12)}}},
			want:     []found{{KindFenceBelowAcknowledged, "r", "2"}, {KindFenceBelowApplied, "r", "2"}},
		},
		{
			// A failover that lost b's commit: the log and the fence both
			// went back, so only the acknowledgement shows it.
			name:    "fence-below-acknowledged: the fence went back with a lost commit",
			history: history, rows: rows[:1],
			readings: []FenceReading{{Label: "after failover 1", At: at(5), Fences: map[string]tokens.Token{"r": tok(1, 10)}, Applied: map[string]tokens.Token{"r": tok(1, 10)}}},
			want:     []found{{KindFenceBelowAcknowledged, "r", ""}},
		},
		{
			name:    "fence-below-acknowledged: found at a failover, though the end reads well",
			history: history, rows: rows,
			readings: []FenceReading{
				{Label: "after failover 1", At: at(5), Fences: map[string]tokens.Token{"r": tok(1, 10)}, Applied: map[string]tokens.Token{"r": tok(1, 10)}},
				{Label: "the end", At: at(9), Fences: map[string]tokens.Token{"r": tok(1, 12)}, Applied: map[string]tokens.Token{"r": tok(1, 12)}},
			},
			want: []found{{KindFenceBelowAcknowledged, "r", "2"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(Input{History: tt.history, Rows: tt.rows, Fences: tt.readings})
			var got []found
			for _, f := range summarize(r.Violations) {
				if f.Kind == KindFenceBelowApplied || f.Kind == KindFenceBelowAcknowledged {
					got = append(got, f)
				}
			}
			if got == nil {
				got = []found{}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %+v, want %+v\n%s", got, tt.want, r.Verdict)
			}
		})
	}
}

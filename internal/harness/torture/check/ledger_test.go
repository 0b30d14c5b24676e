package check

import (
	"slices"
	"testing"
)

func deltaRow(id int64, res string, rev int64, intent string, delta int64) Row {
	r := row(id, res, 1, rev, intent, 1)
	r.Delta = delta
	return r
}

// TestTransfersAndLedger: a transfer applied on one side only is torn; a
// balance that is not its start plus its rows' deltas is not conserved;
// a run that keeps both promises passes.
func TestTransfersAndLedger(t *testing.T) {
	history := concat(
		write(1, 1, TypeOK, "t1:from", "res/a", "1:10"), write(1, 1, TypeOK, "t1:to", "res/b", "1:11"),
		write(6, 1, TypeInfo, "t2:from", "res/a", "1:15"), write(6, 1, TypeInfo, "t2:to", "res/b", "1:16"),
		write(5, 2, TypeOK, "c1", "res/a", "1:14"),
	)
	whole := []Row{
		deltaRow(1, "res/a", 10, "t1:from", -5), deltaRow(2, "res/b", 11, "t1:to", 5),
		deltaRow(3, "res/a", 14, "c1", 1),
	}
	for _, tt := range []struct {
		name     string
		rows     []Row
		balances map[string]int64
		want     []found
	}{
		{"conserved", whole, map[string]int64{"res/a": 996, "res/b": 1005}, []found{}},
		{"torn", append(slices.Clone(whole), deltaRow(4, "res/a", 15, "t2:from", -7)), map[string]int64{"res/a": 989, "res/b": 1005},
			[]found{{KindTornTransfer, "res/a", "4"}}},
		{"made money", whole, map[string]int64{"res/a": 996, "res/b": 1006}, []found{{KindNotConserved, "res/b", ""}}},
		{"rows without a balance", whole, map[string]int64{"res/a": 996}, []found{{KindNotConserved, "res/b", "2"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(Input{History: history, Rows: tt.rows, Ledger: &Ledger{Initial: 1000, Balances: tt.balances}})
			if s := summarize(got.Violations); !slices.Equal(s, tt.want) {
				t.Fatalf("violations %+v, want %+v", got.Violations, tt.want)
			}
		})
	}
}

package check

import "testing"

// TestBatching: writes are counted per transaction, a transfer's two rows
// as one write; a write shares a transaction when another write is in it.
func TestBatching(t *testing.T) {
	txn := func(r Row, id int64) Row { r.Txn = id; return r }
	rows := []Row{
		txn(row(1, "r", 1, 10, "a", 1), 100),      // alone
		txn(row(2, "r", 1, 10, "b", 1), 101),      // coalesced with c
		txn(row(3, "r", 1, 10, "c", 1), 101),      //
		txn(row(4, "s", 1, 11, "t:from", 2), 102), // a transfer alone: one write
		txn(row(5, "u", 1, 12, "t:to", 2), 102),   //
		txn(row(6, "s", 1, 13, "d", 3), 103),      // grouped with e
		txn(row(7, "u", 1, 14, "e", 4), 103),      //
		txn(row(8, "s", 1, 13, "d2", 3), 104),     // alone
		txn(row(9, "s", 1, 15, "x:from", 5), 105), // a transfer grouped with f
		txn(row(10, "u", 1, 16, "x:to", 5), 105),  //
		txn(row(11, "v", 1, 17, "f", 6), 105),     //
	}
	got := sharing(rows)
	want := Batching{Writes: 9, Transactions: 6, Shared: 6}
	if got == nil || *got != want {
		t.Fatalf("sharing = %+v, want %+v", got, want)
	}
	if s, w := got.String(), "9 writes in 6 transactions (1.5 per transaction), 66% of them sharing one"; s != w {
		t.Errorf("String() = %q, want %q", s, w)
	}
	rows[3].Txn = 0
	if got := sharing(rows); got != nil {
		t.Errorf("a row without its transaction: %+v, want nil", got)
	}
}

package fence_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/fencegw/fencegw/fence"
)

// BenchmarkApply measures the shapes of a request on a real database, one
// request at a time: a lone write (one fence), a transfer (two fences), a
// batch of ten debits of ten accounts (ten fences), and the same lone
// write keyed (two round trips). What one more fence costs is the
// difference between the first two.
func BenchmarkApply(b *testing.B) {
	d := newBenchDB(b)
	ctx := context.Background()
	keys := 0 // across runs of the sub-benchmark: a key used before would replay
	key := func(int) *fence.IdempotencyKey {
		keys++
		return &fence.IdempotencyKey{Client: "b", Scope: "debit", Value: fmt.Sprint("k", keys), Retention: 3600e9}
	}
	for _, bm := range []struct {
		name    string
		request func(i int) (*fence.Request, error)
	}{
		{"debit", func(int) (*fence.Request, error) { return fence.NewRequest([]fence.Write{credit(d, "acct-1", 1)}, nil) }},
		{"transfer", func(i int) (*fence.Request, error) {
			from, to := "acct-2", "acct-3"
			if i%2 == 0 { // back and forth: balances stay put
				from, to = to, from
			}
			return fence.NewRequest([]fence.Write{transfer(d, from, to, 1, 1, 1)}, nil)
		}},
		{"batch-of-10", func(int) (*fence.Request, error) {
			ws := make([]fence.Write, 10)
			for i := range ws {
				ws[i] = credit(d, fmt.Sprint("acct-", 10+i), 1)
			}
			return fence.NewRequest(ws, nil)
		}},
		{"keyed-debit", func(i int) (*fence.Request, error) {
			return fence.NewRequest([]fence.Write{credit(d, "acct-4", 1)}, key(i))
		}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				req, err := bm.request(i)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := d.store.Apply(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func credit(d *db, account string, rev int64) fence.Write {
	return d.write("credit", fmt.Sprintf(`{"account": %q, "amount_cents": 1}`, account), tok(rev))
}

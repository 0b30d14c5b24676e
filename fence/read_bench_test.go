package fence_test

import (
	"context"
	"testing"

	"github.com/fencegw/fencegw/fence"
)

// BenchmarkRead measures what the fence adds to a read, one at a time on a
// real database: the demo's balance read run by Store.Read (a
// read-only transaction, its fence read, the SELECT, one round trip), and
// the same SELECT as the policy compiles it, sent alone through the pool
// (BENCHMARKS.md holds the figures).
func BenchmarkRead(b *testing.B) {
	d := newBenchDB(b, readOperations)
	ctx := context.Background()
	if _, err := d.store.Apply(ctx, mustBenchRequest(b, credit(d, "acct-5", 1))); err != nil {
		b.Fatal(err)
	}
	w := d.write("balance", `{"account": "acct-5"}`, tok(1))
	b.Run("fenced", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			req, err := fence.NewRequest([]fence.Write{w}, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := d.store.Read(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	st := &w.Operation.Statements[0]
	args := w.Operation.Bind(nil, st, w.Args, w.Resources, w.Tokens)
	b.Run("plain-select", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var n int64
			var rows []byte
			if err := d.pool.QueryRow(ctx, st.SQL, args...).Scan(&n, &rows); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func mustBenchRequest(b *testing.B, writes ...fence.Write) *fence.Request {
	b.Helper()
	req, err := fence.NewRequest(writes, nil)
	if err != nil {
		b.Fatal(err)
	}
	return req
}

package fence_test

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"
)

var pruneRows = flag.Int64("prune-rows", 0, "BenchmarkPruneFences: also sweep a table of this many fence rows (e.g. 10000000; its fill takes minutes)")

// BenchmarkPruneFences measures one sweep of the janitor's pruning
// (Store.PruneFences) over a table whose every row is at or below the
// fence floor: how long a prune round takes as the table grows. The fill
// is not timed.
func BenchmarkPruneFences(b *testing.B) {
	sizes := []int64{10_000, 100_000}
	if *pruneRows > 0 {
		sizes = append(sizes, *pruneRows)
	}
	ctx := context.Background()
	for _, size := range sizes {
		b.Run(fmt.Sprint("rows-", size), func(b *testing.B) {
			d := newBenchDB(b)
			if _, err := d.pool.Exec(ctx, "UPDATE fencegw.fence_floor SET epoch = 1, revision = $1", size); err != nil {
				b.Fatal(err)
			}
			var swept time.Duration
			for b.Loop() {
				b.StopTimer()
				_, err := d.pool.Exec(ctx, `INSERT INTO fencegw.fences (resource, epoch, revision)
					SELECT 'prune/' || lpad(i::text, 10, '0'), 1, i FROM generate_series(1, $1::bigint) i`, size)
				if err == nil {
					_, err = d.pool.Exec(ctx, "VACUUM ANALYZE fencegw.fences")
				}
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				n, err := d.store.PruneFences(ctx)
				swept += time.Since(start)
				if err != nil || n != size {
					b.Fatalf("pruned %d of %d rows: %v", n, size, err)
				}
			}
			b.ReportMetric(float64(swept.Nanoseconds())/float64(size*int64(b.N)), "ns/row")
		})
	}
}

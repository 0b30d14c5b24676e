package guard_test

import (
	"context"
	"testing"

	"github.com/fencegw/fencegw/guard"
)

// BenchmarkGuardedRows measures what the row trigger costs: one fenced
// transaction inserting rows rows into demo.write_log, rolled back, with
// the guard off and on. The per-row cost is the difference per row.
func BenchmarkGuardedRows(b *testing.B) {
	const rows = 100
	conn, pol := demo(b)
	ctx := context.Background()
	insert := `INSERT INTO demo.write_log (resource, epoch, revision, operation, account, amount_cents)
		SELECT 'account/acct-1', 1, 1, 'bench', 'acct-1', 1 FROM generate_series(1, 100)`
	run := func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tx, err := conn.Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "SELECT fencegw.fence('account/acct-1', 1, 1, false)"); err != nil {
				b.Fatal(err)
			}
			if tag, err := tx.Exec(ctx, insert); err != nil || tag.RowsAffected() != rows {
				b.Fatalf("insert: %v %v", tag, err)
			}
			if err := tx.Rollback(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/row")
	}
	b.Run("off", run)
	if err := guard.Install(ctx, conn, pol); err != nil {
		b.Fatal(err)
	}
	b.Run("on", run)
}

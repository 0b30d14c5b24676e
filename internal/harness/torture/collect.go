package torture

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/torture/check"
)

// collect reads every history and the log table and checks them.
func collect(ctx context.Context, dir, dbURL string, workers int, faults map[string]int, skipped map[string]string) (check.Report, error) {
	var history []check.Event
	for i := range workers {
		f, err := os.Open(historyPath(dir, i))
		if err != nil {
			return check.Report{}, err
		}
		evs, err := check.ReadHistory(f)
		f.Close()
		if err != nil {
			return check.Report{}, fmt.Errorf("torture: worker %d: %w", i, err)
		}
		history = append(history, evs...)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return check.Report{}, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT id, resource, epoch, revision, intent, worker, delta, txn FROM torture.log ORDER BY id")
	if err != nil {
		return check.Report{}, err
	}
	logRows, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (check.Row, error) {
		var row check.Row
		err := r.Scan(&row.ID, &row.Resource, &row.Epoch, &row.Revision, &row.Intent, &row.Worker, &row.Delta, &row.Txn)
		return row, err
	})
	if err != nil {
		return check.Report{}, err
	}
	ledger := check.Ledger{Initial: initialBalance, Balances: map[string]int64{}}
	rows, err = conn.Query(ctx, "SELECT resource, cents FROM torture.balances")
	if err != nil {
		return check.Report{}, err
	}
	var res string
	var cents int64
	if _, err := pgx.ForEachRow(rows, []any{&res, &cents}, func() error { ledger.Balances[res] = cents; return nil }); err != nil {
		return check.Report{}, err
	}
	return check.Check(check.Input{History: history, Rows: logRows, Ledger: &ledger, Faults: faults, Skipped: skipped, Strict: strictResource, Permits: semaphoreOf}), nil
}

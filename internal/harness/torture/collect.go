package torture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/torture/check"
)

// collect reads every history and log of grants and, in one snapshot of
// the database, the log table, the balances and the fences, and checks
// them with the fences read during the run (readings).
func collect(ctx context.Context, dir, dbURL string, workers int, faults map[string]int, skipped map[string]string, readings []check.FenceReading) (check.Report, error) {
	history, err := readLogs(dir, workers, historyPath, check.ReadHistory, false)
	if err != nil {
		return check.Report{}, fmt.Errorf("torture: history: %w", err)
	}
	in := check.Input{History: history, Ledger: &check.Ledger{Initial: initialBalance, Balances: map[string]int64{}},
		Faults: faults, Skipped: skipped, Strict: strictResource, Permits: semaphoreOf, Churn: churnResource}
	if in.Grants, err = readLogs(dir, workers, grantsPath, check.ReadGrants, true); err != nil {
		return check.Report{}, fmt.Errorf("torture: grants: %w", err)
	}
	err = inSnapshot(ctx, dbURL, func(tx pgx.Tx, at time.Time) error {
		rows, err := tx.Query(ctx, "SELECT id, resource, epoch, revision, intent, worker, delta, txn FROM torture.log ORDER BY id")
		if err != nil {
			return err
		}
		in.Rows, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (check.Row, error) {
			var row check.Row
			err := r.Scan(&row.ID, &row.Resource, &row.Epoch, &row.Revision, &row.Intent, &row.Worker, &row.Delta, &row.Txn)
			return row, err
		})
		if err != nil {
			return err
		}
		if rows, err = tx.Query(ctx, "SELECT resource, cents FROM torture.balances"); err != nil {
			return err
		}
		var res string
		var cents int64
		if _, err := pgx.ForEachRow(rows, []any{&res, &cents}, func() error { in.Ledger.Balances[res] = cents; return nil }); err != nil {
			return err
		}
		end, err := readFences(ctx, tx, "the end", at)
		in.Fences = append(readings, end)
		if err != nil {
			return err
		}
		return countRevocations(ctx, tx, faults)
	})
	if err != nil {
		return check.Report{}, err
	}
	return check.Check(in), nil
}

// readLogs reads the logs at path(dir, i) of holders 0 to n-1, each with
// read, one after the other: only the end of one can be torn. Where
// optional, a holder that keeps no such log has no file.
func readLogs[T any](dir string, n int, path func(string, int) string, read func(io.Reader) ([]T, error), optional bool) ([]T, error) {
	var all []T
	for i := range n {
		f, err := os.Open(path(dir, i))
		if optional && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		got, err := read(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path(dir, i), err)
		}
		all = append(all, got...)
	}
	return all, nil
}

// countRevocations adds to faults the leases the gateways revoked on
// their own, by the lock history: not renewed for two TTLs (the reaper),
// held past max_hold (a keepalive or the reaper). The gateways' clocks
// decide both; under clock faults the nemesis steps them.
func countRevocations(ctx context.Context, tx pgx.Tx, faults map[string]int) error {
	var unrenewed, pastMaxHold int
	err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE reason LIKE 'not renewed%'), count(*) FILTER (WHERE reason LIKE '%max_hold%')
		FROM fencegw.lock_history WHERE event = 'revoked'`).Scan(&unrenewed, &pastMaxHold)
	if err != nil {
		return fmt.Errorf("torture: read the lock history: %w", err)
	}
	if unrenewed > 0 {
		faults["leases-revoked-unrenewed"] = unrenewed
	}
	if pastMaxHold > 0 {
		faults["leases-revoked-past-max-hold"] = pastMaxHold
	}
	return nil
}

package fence

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// TableSize is the size of one table of the gateway's schema.
type TableSize struct {
	Table string `json:"table"` // without the schema: fences
	// Rows is counted when the table is small, estimated from PostgreSQL's
	// statistics (pg_class.reltuples, kept by autovacuum and ANALYZE) when
	// it is not: counting ten million fence rows takes seconds.
	Rows      int64 `json:"rows"`
	Estimated bool  `json:"estimated,omitempty"`
	// Bytes is what the table takes on disk with its indexes and TOAST.
	Bytes int64 `json:"bytes"`
}

// countBelow is the estimate under which a table's rows are counted.
const countBelow = 100_000

// TableSizes returns the size of every table of the schema fencegw, by
// name.
func TableSizes(ctx context.Context, db DB) ([]TableSize, error) {
	rows, err := db.Query(ctx, `SELECT c.relname, c.reltuples::bigint, pg_total_relation_size(c.oid), has_table_privilege(c.oid, 'SELECT')
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'fencegw' AND c.relkind IN ('r', 'p') ORDER BY c.relname`)
	if err != nil {
		return nil, fmt.Errorf("fence: table sizes: %w", err)
	}
	var readable []bool
	sizes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (t TableSize, err error) {
		var canRead bool
		err = r.Scan(&t.Table, &t.Rows, &t.Bytes, &canRead)
		readable = append(readable, canRead)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("fence: table sizes: %w", err)
	}
	for i := range sizes {
		t := &sizes[i]
		// reltuples is -1 for a table never analysed: counted, where the
		// role may read it (a table added by hand, or by a later release
		// before its grants, is estimated rather than fail the rest).
		if t.Rows >= countBelow || !readable[i] {
			t.Rows, t.Estimated = max(t.Rows, 0), true
			continue
		}
		if err := db.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{"fencegw", t.Table}.Sanitize()).Scan(&t.Rows); err != nil {
			return nil, fmt.Errorf("fence: counting fencegw.%s: %w", t.Table, err)
		}
	}
	return sizes, nil
}

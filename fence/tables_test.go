package fence_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/fence"
)

// TestTableSizesOfATableTheRoleCannotRead: a fencegw table the role may
// not read (added by a later release before its grants, or by hand) is
// estimated, and the other tables are still counted: one table cannot
// take the metric and inspect's sizes down with it.
func TestTableSizesOfATableTheRoleCannotRead(t *testing.T) {
	d := newDB(t)
	ctx := context.Background()
	role := fmt.Sprintf("fencegw_sizes_%d", time.Now().UnixNano())
	for _, sql := range []string{
		"CREATE TABLE fencegw.not_granted (id int)",
		"INSERT INTO fencegw.not_granted SELECT generate_series(1, 5)",
		"CREATE ROLE " + role,
		"GRANT USAGE ON SCHEMA fencegw TO " + role,
		"GRANT SELECT ON fencegw.fences TO " + role,
	} {
		if _, err := d.pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	t.Cleanup(func() {
		_, _ = d.pool.Exec(context.Background(), "DROP OWNED BY "+role)
		_, _ = d.pool.Exec(context.Background(), "DROP ROLE "+role)
	})
	if _, err := d.pool.Exec(ctx, "SELECT fencegw.fence('account/acct-1', 1, 5, false)"); err != nil {
		t.Fatal(err)
	}
	var sizes []fence.TableSize
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+role); err != nil {
			return err
		}
		var err error
		sizes, err = fence.TableSizes(ctx, tx)
		return err
	})
	if err != nil {
		t.Fatalf("TableSizes as a role that cannot read every table: %v", err)
	}
	got := map[string]fence.TableSize{}
	for _, s := range sizes {
		got[s.Table] = s
	}
	if f := got["fences"]; f.Rows != 1 || f.Estimated {
		t.Errorf("fences = %+v, want 1 row counted", f)
	}
	if n, ok := got["not_granted"]; !ok || !n.Estimated || n.Rows < 0 || n.Bytes <= 0 {
		t.Errorf("not_granted = %+v (listed %t), want an estimate, bytes > 0", n, ok)
	}
}

package testenv

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// LockFenceRow locks resource's fence row from a transaction of its own,
// as an operator's open transaction would, until unlock or the end of the
// test: writes of resource wait for it. The fence row must exist.
func LockFenceRow(t testing.TB, pool *pgxpool.Pool, resource string) (unlock func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	unlock = func() { _ = tx.Rollback(ctx) }
	t.Cleanup(unlock)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM fencegw.fences WHERE resource = $1 FOR UPDATE", resource); err != nil {
		t.Fatal(err)
	}
	return unlock
}

// LockWaiters counts the sessions of pool's database that wait for a lock
// in a statement matching the SQL LIKE pattern.
func LockWaiters(pool *pgxpool.Pool, pattern string) int {
	var n int
	_ = pool.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1", pattern).Scan(&n)
	return n
}

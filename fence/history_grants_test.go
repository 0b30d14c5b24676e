package fence_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/fence"
)

// TestHistoryWithoutTheCursorsGrants: a gateway role granted before the
// cursor's table existed (migrated, `fencegw grants` not run again)
// records the history still, without a cursor; only a cursor's move needs
// the new grants.
func TestHistoryWithoutTheCursorsGrants(t *testing.T) {
	h := newDB(t)
	ctx := context.Background()
	role := fmt.Sprintf("fencegw_history_%d", time.Now().UnixNano())
	for _, sql := range []string{
		"CREATE ROLE " + role,
		"GRANT USAGE ON SCHEMA fencegw TO " + role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON fencegw.lock_history TO " + role,
		"GRANT USAGE ON ALL SEQUENCES IN SCHEMA fencegw TO " + role,
	} {
		if _, err := h.pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	t.Cleanup(func() {
		_, _ = h.pool.Exec(context.Background(), "DROP OWNED BY "+role)
		_, _ = h.pool.Exec(context.Background(), "DROP ROLE "+role)
	})
	cfg := h.pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["role"] = role
	fence.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	store, err := fence.New(fence.Config{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	end := []fence.HistoryEvent{{Resource: "r", Event: fence.Expired, LeaseID: "c1", Token: "1:5"}}
	if err := store.RecordHistory(ctx, end, fence.HistoryCursor{}); err != nil {
		t.Fatalf("recording without a cursor, as a role without the cursor's grants: %v", err)
	}
	if err := store.RecordHistory(ctx, end, fence.HistoryCursor{Identity: "x", Revision: 5}); err == nil {
		t.Error("moving the cursor as a role without its grants succeeded")
	}
	es, err := fence.History(ctx, h.pool, "r", time.Time{}, 100)
	if err != nil || len(es) != 1 {
		t.Fatalf("history: %v, %v; want the one end", es, err)
	}
}

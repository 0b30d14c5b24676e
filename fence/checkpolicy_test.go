package fence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/policy"
)

// TestCheckPolicyOnASessionEnded: a session that ends under the policy
// check (PostgreSQL restarting, an administrator) is an error of the
// check, which serve's start-up waits out, never a verdict that the
// policy's statements are refused.
func TestCheckPolicyOnASessionEnded(t *testing.T) {
	ctx := context.Background()
	d := newDB(t)
	cfg := d.pool.Config()
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := fence.CheckPolicy(ctx, pool, d.pol); err != nil {
		t.Fatalf("the demo policy: %v", err)
	}
	// The pool's one connection, its backend ended: the check's next
	// statement meets the end.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := conn.Conn().PgConn().PID()
	conn.Release()
	if _, err := d.pool.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(time.Minute, func() bool {
		var alive bool
		return d.pool.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1)", pid).Scan(&alive) == nil && !alive
	}) {
		t.Fatal("the backend never ended")
	}
	err = fence.CheckPolicy(ctx, pool, d.pol)
	var pe *policy.Error
	if err == nil || errors.As(err, &pe) {
		t.Fatalf("the policy checked on a session that ended: %v, want an error of the check, not of the policy", err)
	}
	if err := fence.CheckPolicy(ctx, pool, d.pol); err != nil {
		t.Fatalf("checked again on a new session: %v", err)
	}
}

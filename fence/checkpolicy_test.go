package fence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/policy"
)

// TestCheckPolicyOnASessionEnded: a session ended in the middle of the
// policy check (PostgreSQL restarting, an administrator) is an error of
// the check, which serve's start-up waits out, never a verdict that the
// policy's statements are refused. The check's Prepare is held on a lock
// of a table its statements use, and its backend terminated while it
// waits: PostgreSQL answers that Prepare with FATAL 57P01, which the
// check must return as it is.
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
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := conn.Conn().PgConn().PID() // the check's, the pool's one connection
	conn.Release()

	lock, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, "LOCK TABLE demo.accounts IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	checked := make(chan error, 1)
	go func() { checked <- fence.CheckPolicy(ctx, pool, d.pol) }()
	if !testenv.WaitFor(time.Minute, func() bool {
		var waiting bool
		return d.pool.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock')", pid).Scan(&waiting) == nil && waiting
	}) {
		t.Fatal("the policy check never waited for the lock")
	}
	if _, err := d.pool.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	err = <-checked
	// The session's end itself, not a verdict on the statement it met,
	// nor the "conn closed" of the statement after it.
	var pe *policy.Error
	var pgErr *pgconn.PgError
	if errors.As(err, &pe) || !errors.As(err, &pgErr) || pgErr.Code != pgerrcode.AdminShutdown {
		t.Fatalf("the policy checked on a session ended under it: %v, want the check's error, 57P01", err)
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := fence.CheckPolicy(ctx, pool, d.pol); err != nil {
		t.Fatalf("checked again on a new session: %v", err)
	}
}

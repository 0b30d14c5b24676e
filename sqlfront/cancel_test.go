package sqlfront_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestCancelOnlyYourOwn: a CancelRequest cancels the statement of the
// session whose key it names, with the key the front gave it; one with
// another key, or another session's pid, cancels nothing.
func TestCancelOnlyYourOwn(t *testing.T) {
	f := newFront(t)
	ctx := context.Background()
	lock, err := f.gw.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, "SELECT pg_advisory_xact_lock(36)"); err != nil {
		t.Fatal(err)
	}
	conn := f.connect(billing)
	waited := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, "SELECT pg_advisory_xact_lock(36)")
		waited <- err
	}()
	waiting := func() bool { return testenv.LockWaiters(f.gw.Pool, "%pg_advisory_xact_lock(36)%") == 1 }
	if !testenv.WaitFor(time.Minute, waiting) {
		t.Fatal("the session never waited for the lock")
	}
	pid, key := conn.PgConn().PID(), conn.PgConn().SecretKey()
	wrong := append([]byte(nil), key...)
	wrong[0] ^= 0xff
	for _, req := range []pgproto3.CancelRequest{{ProcessID: pid, SecretKey: wrong}, {ProcessID: pid ^ 1, SecretKey: key}} {
		r := f.dial()
		r.send(&req)
		r.closedWith() // the front has handled it once it closes the connection
		if !waiting() {
			t.Fatalf("a cancel request with pid %d and another key cancelled the session", req.ProcessID)
		}
	}
	if err := conn.PgConn().CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; sqlState(err) != "57014" {
		t.Fatalf("the session's own cancel: %v, want 57014", err)
	}
}

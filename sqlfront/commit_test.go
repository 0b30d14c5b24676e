package sqlfront_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestCommitWarnedIsUnknown: a COMMIT that PostgreSQL answers with a
// WARNING (here an application's deferred trigger; in production a
// cancelled wait for synchronous replication) is answered 08007, its
// outcome unknown, never success: an explicit COMMIT, and an implicit
// transaction's in the extended and in the simple protocol. A warning
// earlier in the transaction, or a notice at COMMIT, changes nothing.
func TestCommitWarnedIsUnknown(t *testing.T) {
	f := newFront(t)
	ctx := context.Background()
	warnAtCommit(f)
	conn := f.connect(billing)
	explicit := func(id int) error {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DO $$ BEGIN RAISE WARNING 'a warning before the commit'; END $$`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO demo.warned VALUES ($1)", id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT fencegw.transaction_key($1)", fmt.Sprint("warned", id)); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	for _, tc := range []struct {
		name string
		run  func() error
		code string
	}{
		{"an explicit COMMIT", func() error { return explicit(1) }, "08007"},
		{"an implicit transaction, extended", func() error {
			_, err := conn.Exec(ctx, "INSERT INTO demo.warned VALUES ($1)", 2)
			return err
		}, "08007"},
		{"an implicit transaction, simple", func() error {
			_, err := conn.Exec(ctx, "INSERT INTO demo.warned VALUES (3)", pgx.QueryExecModeSimpleProtocol)
			return err
		}, "08007"},
		{"a warning before the COMMIT, a notice at it", func() error { return explicit(-1) }, ""},
		{"a notice at an implicit commit", func() error {
			_, err := conn.Exec(ctx, "INSERT INTO demo.warned VALUES ($1)", -2)
			return err
		}, ""},
	} {
		if code := sqlState(tc.run()); code != tc.code {
			t.Errorf("%s: SQLSTATE %q, want %q", tc.name, code, tc.code)
		}
	}
	// Unknown is no lie: those commits did happen, as far as the
	// primary is concerned.
	var n int
	if err := f.gw.Pool.QueryRow(ctx, "SELECT count(*) FROM demo.warned").Scan(&n); err != nil || n != 5 {
		t.Fatalf("%d rows (%v), want 5", n, err)
	}
	if !committedKey(t, f.connect(billing), "warned1") {
		t.Fatal("the transaction answered 08007 that did commit is not said to have")
	}
}

// TestBackendLostAfterCommitSent: the connection to PostgreSQL lost
// while a COMMIT is on its way is answered 08007 (the transaction's
// outcome unknown), and the session ends.
func TestBackendLostAfterCommitSent(t *testing.T) {
	f := newFront(t)
	ctx := context.Background()
	f.admin(
		"CREATE TABLE demo.waits (id int)",
		"GRANT INSERT ON demo.waits TO "+f.role,
		`CREATE FUNCTION demo.wait_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN PERFORM pg_advisory_xact_lock(77); RETURN NULL; END $$`,
		"CREATE CONSTRAINT TRIGGER wait AFTER INSERT ON demo.waits DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION demo.wait_at_commit()",
	)
	lock, err := f.gw.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, "SELECT pg_advisory_xact_lock(77)"); err != nil {
		t.Fatal(err)
	}
	conn := f.connect(billing)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT fencegw.transaction_key('lost')"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO demo.waits VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	committed := make(chan error, 1)
	go func() { committed <- tx.Commit(ctx) }()
	if !testenv.WaitFor(time.Minute, func() bool { return testenv.LockWaiters(f.gw.Pool, "%commit%") == 1 }) {
		t.Fatal("the COMMIT never waited in its trigger")
	}
	if _, err := f.gw.Pool.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", f.role); err != nil {
		t.Fatal(err)
	}
	if err := <-committed; sqlState(err) != "08007" {
		t.Fatalf("a COMMIT whose backend was lost: %v, want 08007", err)
	}
	// The key tells what became of it: terminated while it waited, it
	// did not commit.
	if committedKey(t, f.connect(billing), "lost") {
		t.Fatal("the transaction whose backend was terminated before it committed is said to have committed")
	}
}

// TestCloseAnswersACommitOnItsWay: the front shutting down while a
// session's COMMIT is on its way lets it finish and answers it, then
// ends the session: cut off, the commit would have been rolled back, or
// its outcome unknown.
func TestCloseAnswersACommitOnItsWay(t *testing.T) {
	f := newFront(t)
	ctx := context.Background()
	f.admin(
		"CREATE TABLE demo.waits (id int)",
		"GRANT INSERT ON demo.waits TO "+f.role,
		`CREATE FUNCTION demo.wait_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN PERFORM pg_advisory_xact_lock(78); RETURN NULL; END $$`,
		"CREATE CONSTRAINT TRIGGER wait AFTER INSERT ON demo.waits DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION demo.wait_at_commit()",
	)
	lock, err := f.gw.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, "SELECT pg_advisory_xact_lock(78)"); err != nil {
		t.Fatal(err)
	}
	tx, err := f.connect(billing).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO demo.waits VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	committed := make(chan error, 1)
	go func() { committed <- tx.Commit(ctx) }()
	if !testenv.WaitFor(time.Minute, func() bool { return testenv.LockWaiters(f.gw.Pool, "%commit%") == 1 }) {
		t.Fatal("the COMMIT never waited in its trigger")
	}
	go f.srv.Close()
	if !testenv.WaitFor(time.Minute, func() bool { return strings.Contains(f.log.String(), "ends once PostgreSQL has answered") }) {
		t.Fatal("the session never heard the front shut down")
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-committed; err != nil {
		t.Fatalf("a COMMIT on its way as the front shut down: %v, want it answered", err)
	}
	var n int
	if err := f.gw.Pool.QueryRow(ctx, "SELECT count(*) FROM demo.waits").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d rows (%v), want the committed one", n, err)
	}
}

// TestCommitWarnedSkipsTheRestOfItsPipeline: a COMMIT PostgreSQL warns
// at is answered as failed (08007), and a client takes what it sent after
// it, up to its Sync, as skipped. So it must be: a write pipelined behind
// the COMMIT is not run, whatever the client sent before the answer came.
func TestCommitWarnedSkipsTheRestOfItsPipeline(t *testing.T) {
	f := newFront(t)
	ctx := context.Background()
	warnAtCommit(f)
	conn := f.connect(billing)
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("INSERT INTO demo.warned VALUES ($1)", 1)
	b.Queue("COMMIT")
	b.Queue("CREATE TEMP TABLE after_commit (id int)")
	br := conn.SendBatch(ctx, b)
	_, eBegin := br.Exec()
	_, eInsert := br.Exec()
	_, eCommit := br.Exec()
	_, eAfter := br.Exec()
	br.Close()
	if eBegin != nil || eInsert != nil || sqlState(eCommit) != "08007" || eAfter == nil {
		t.Fatalf("BEGIN %v, INSERT %v, COMMIT %v, after %v; want ok, ok, 08007, skipped", eBegin, eInsert, eCommit, eAfter)
	}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('pg_temp.after_commit') IS NOT NULL").Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatal("the statement pipelined behind a COMMIT answered 08007 ran, though the client was told it was skipped")
	}
}

// warnAtCommit makes demo.warned a table at whose rows of id > 0
// PostgreSQL warns when their transaction commits (a deferred trigger;
// in production, a cancelled wait for synchronous replication), and at
// the others only notices.
func warnAtCommit(f *front) {
	f.admin(
		"CREATE TABLE demo.warned (id int)",
		"GRANT INSERT ON demo.warned TO "+f.role,
		`CREATE FUNCTION demo.warn_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN
		     IF NEW.id > 0 THEN RAISE WARNING 'committed locally, but might not have been replicated'; ELSE RAISE NOTICE 'fine'; END IF;
		     RETURN NULL;
		 END $$`,
		"CREATE CONSTRAINT TRIGGER warn AFTER INSERT ON demo.warned DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION demo.warn_at_commit()",
	)
}

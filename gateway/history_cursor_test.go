package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// waitPoisonTried polls until the trigger poisonHistory installs has
// refused a write (its sequence counts the attempts, which a rollback
// does not undo).
func (h *harness) waitPoisonTried() {
	h.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var tried bool
		if err := h.pool.QueryRow(context.Background(), "SELECT is_called FROM poison_tried").Scan(&tried); err != nil {
			h.t.Fatal(err)
		}
		if tried {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatal("the lock history never tried to record the poisoned resource")
		}
		time.Sleep(50 * time.Millisecond) // polling for a condition, not waiting out a window
	}
}

// waitLockWaiters polls until n sessions wait for a lock on the
// history's cursor table.
func (h *harness) waitLockWaiters(n int) {
	h.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var waiting int
		if err := h.pool.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_locks WHERE relation = 'fencegw.history_cursor'::regclass AND NOT granted").Scan(&waiting); err != nil {
			h.t.Fatal(err)
		}
		if waiting == n {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%d sessions wait for the cursor's table, want %d", waiting, n)
		}
		time.Sleep(50 * time.Millisecond) // polling for a condition, not waiting out a window
	}
}

// poisonHistory makes every write of the lock history with a release of
// resource fail, until the function it returns is called.
func (h *harness) poisonHistory(resource string) (cure func()) {
	h.t.Helper()
	ctx := context.Background()
	for _, sql := range []string{
		"CREATE SEQUENCE poison_tried",
		`CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.resource = '` + resource + `' AND NEW.event = '` + fence.Released + `' THEN
				PERFORM nextval('poison_tried');
				RAISE EXCEPTION 'poisoned';
			END IF;
			RETURN NEW;
		END $$`,
		"CREATE TRIGGER poison BEFORE INSERT ON fencegw.lock_history FOR EACH ROW EXECUTE FUNCTION poison()",
	} {
		if _, err := h.pool.Exec(ctx, sql); err != nil {
			h.t.Fatal(err)
		}
	}
	return func() {
		if _, err := h.pool.Exec(ctx, "DROP TRIGGER poison ON fencegw.lock_history"); err != nil {
			h.t.Fatal(err)
		}
	}
}

// TestHistoryCursorHeldAfterAFailedWrite: ends whose write failed are not
// recorded, so the cursor must not pass them, however many later writes
// succeed: once the gateway restarts its history, it resumes before them
// and records them.
func TestHistoryCursorHeldAfterAFailedWrite(t *testing.T) {
	const lost, later = "account/acct-40", "account/acct-41"
	h := newHarness(t, demoPolicy(t, "monotonic"))
	stop := startHistory(t, h.node)
	first := h.mustAcquire(later, 10, 0) // the cursor, before the lost end
	h.release(first)
	h.waitHistory(later, func(es []fence.HistoryEvent) bool { _, ends := endsOf(es); return len(ends[first.ID]) == 1 })
	cure := h.poisonHistory(lost)
	l := h.mustAcquire(lost, 10, 0)
	h.release(l)
	h.waitPoisonTried()
	after := h.mustAcquire(later, 10, 0)
	h.release(after)
	h.waitHistory(later, func(es []fence.HistoryEvent) bool { _, ends := endsOf(es); return len(ends[after.ID]) == 1 })
	cure()
	stop()

	// A restart: the history resumes at its cursor.
	runHistory(t, h.node)
	last := h.mustAcquire(later, 10, 0)
	h.release(last)
	h.waitHistory(later, func(es []fence.HistoryEvent) bool { _, ends := endsOf(es); return len(ends[last.ID]) == 1 })
	if _, ends := endsOf(h.history(lost)); len(ends[l.ID]) != 1 {
		t.Errorf("the end whose write failed: %+v, want it recorded once the history resumed at its cursor", ends[l.ID])
	}
}

// TestHistoryCursorHeldWhenUnread: a replica that cannot read the cursor
// watches from now, past ends nobody recorded, so it must leave the
// cursor where it is: a later replica resumes there and records them.
func TestHistoryCursorHeldWhenUnread(t *testing.T) {
	const resource = "account/acct-42"
	h := newHarness(t, demoPolicy(t, "monotonic"))
	stop := startHistory(t, h.node)
	first := h.mustAcquire(resource, 10, 0)
	h.release(first)
	h.waitHistory(resource, func(es []fence.HistoryEvent) bool { _, ends := endsOf(es); return len(ends[first.ID]) == 1 })
	stop()
	gap := h.mustAcquire(resource, 10, 0) // ends while no replica watches
	h.release(gap)

	// The cursor's table locked: the replica's read of it times out.
	tx, err := h.pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), "LOCK TABLE fencegw.history_cursor IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.node.RunHistory(ctx) }()
	stop = func() { cancel(); <-done }
	h.waitLockWaiters(1) // it reads the cursor
	h.waitLockWaiters(0) // and gives up
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	// It watches from now once it gave up; an end after that is recorded.
	var seen []lease
	h.waitHistory(resource, func(es []fence.HistoryEvent) bool {
		_, ends := endsOf(es)
		for _, l := range seen {
			if len(ends[l.ID]) > 0 {
				return true
			}
		}
		l := h.mustAcquire(resource, 10, 0)
		h.release(l)
		seen = append(seen, l)
		return false
	})
	stop()

	runHistory(t, h.node)
	last := h.mustAcquire(resource, 10, 0)
	h.release(last)
	es := h.waitHistory(resource, func(es []fence.HistoryEvent) bool { _, ends := endsOf(es); return len(ends[last.ID]) == 1 })
	if _, ends := endsOf(es); len(ends[gap.ID]) != 1 {
		t.Errorf("the end in the gap: %+v, want it recorded once a replica resumed at the cursor", ends[gap.ID])
	}
}

// TestHistoryCursorPastEtcdDropped: a cursor past etcd's revision (etcd
// restored from a snapshot goes back) is dropped, as the docs say, not
// kept: kept, it would say every end up to it is recorded, and a later
// replica would resume past the ends etcd's new revisions bring up to it.
func TestHistoryCursorPastEtcdDropped(t *testing.T) {
	const resource = "account/acct-43"
	h := newHarness(t, demoPolicy(t, "monotonic"))
	view, err := h.auth.IdentifiedView(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	past := fence.HistoryCursor{Identity: view.Identity, Revision: view.Revision + 1_000_000}
	if err := h.store().RecordHistory(t.Context(), nil, past); err != nil {
		t.Fatal(err)
	}
	runHistory(t, h.node)
	l := h.mustAcquire(resource, 10, 0)
	h.release(l)
	h.waitHistory(resource, func(es []fence.HistoryEvent) bool { _, ends := endsOf(es); return len(ends[l.ID]) == 1 })
	c, err := fence.ReadHistoryCursor(t.Context(), h.pool)
	if err != nil {
		t.Fatal(err)
	}
	if c.Identity != view.Identity || c.Revision >= past.Revision {
		t.Errorf("cursor %+v after an end at etcd's revision, want it dropped and moved from there (%s, below %d)", c, view.Identity, past.Revision)
	}
}

// TestHistoryResumedBeforeServing: serve reads where the history resumes
// before it serves (ResumeHistory), so a lease granted and released
// before the watch of ends is set up (a busy machine) is still recorded,
// on a database with no cursor yet. Without it, the watch would start
// from whenever it was set up, past that end.
func TestHistoryResumedBeforeServing(t *testing.T) {
	const resource = "account/acct-9144"
	h := newHarness(t, demoPolicy(t, "monotonic"))
	h.node.ResumeHistory(t.Context())
	early := h.mustAcquire(resource, 10, 0)
	h.release(early)
	runHistory(t, h.node)
	h.waitHistory(resource, func(es []fence.HistoryEvent) bool { _, ends := endsOf(es); return len(ends[early.ID]) == 1 })
}

// TestHistoryResumeReadAgainWhenUnread: a ResumeHistory that could not
// read etcd or the cursor (start-up's time spent, a partition) leaves it
// to RunHistory, which reads them itself and moves the cursor, rather
// than watching from whenever it is set up with the cursor held still
// for the whole run.
func TestHistoryResumeReadAgainWhenUnread(t *testing.T) {
	const resource = "account/acct-9145"
	h := newHarness(t, demoPolicy(t, "monotonic"))
	spent, cancel := context.WithCancel(t.Context())
	cancel()
	h.node.ResumeHistory(spent)
	runHistory(t, h.node)
	l := h.mustAcquire(resource, 10, 0)
	h.release(l)
	h.waitHistory(resource, func(es []fence.HistoryEvent) bool { _, ends := endsOf(es); return len(ends[l.ID]) == 1 })
	if !testenv.WaitFor(time.Minute, func() bool {
		c, err := fence.ReadHistoryCursor(t.Context(), h.pool)
		return err == nil && c.Revision > 0
	}) {
		t.Fatal("the history's cursor never moved: RunHistory did not read where to resume itself")
	}
}

package sqlfront_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// A holder is holder A of the seed's GC-pause timeline, driven through
// one PostgreSQL client (pgx, psql, psycopg2, node-postgres), holding a
// transaction open on the front.
type holder interface {
	// write begins a transaction that names token for account's
	// resource, debits 100 and logs it, and returns once PostgreSQL has
	// done all of it; nothing is committed.
	write(account, token string)
	// freeze stops the holder, as a GC pause does; thaw resumes it.
	freeze()
	thaw()
	// commit sends COMMIT and returns the SQLSTATE it failed with, ""
	// if it committed.
	commit() string
}

// debitSQL are A's statements after BEGIN, for any client: its fence,
// then the application's statements as written.
func debitSQL(account, token string) []string {
	tok := mustToken(token)
	return []string{
		fmt.Sprintf("SET LOCAL fencegw.tokens = 'account/%s=%s'", account, token),
		fmt.Sprintf("UPDATE demo.accounts SET balance_cents = balance_cents - 100 WHERE id = '%s'", account),
		fmt.Sprintf("INSERT INTO demo.write_log (resource, epoch, revision, operation, account, amount_cents) VALUES ('account/%s', %d, %d, 'debit', '%s', -100)",
			account, tok.Epoch, tok.Revision, account),
	}
}

// timeline is the seed's GC-pause timeline on the front: A holds the
// lock (a short TTL) and writes in a transaction it leaves open; A
// freezes past its TTL; B is granted the lock and its transaction waits
// for A's fence row; A wakes and sends COMMIT, which is refused (FG409:
// a newer holder has the lock) and rolled back; B's transaction then
// commits. Only B's write is in the database.
func timeline(t *testing.T, f *front, account string, a holder) {
	t.Helper()
	ctx := context.Background()
	resource := "account/" + account
	before := f.state(account)

	la := f.lease(billing, resource, 2, 0)
	a.write(account, la.Token)
	a.freeze()

	lb := f.lease(billing, resource, 30, 60) // granted once A's lease has ended
	conn := f.connect(billing)
	b := make(chan error, 1)
	go func() {
		tx, err := conn.Begin(ctx)
		if err != nil {
			b <- err
			return
		}
		defer tx.Rollback(ctx)
		tok := mustToken(lb.Token)
		for _, sql := range []string{
			fmt.Sprintf("SET LOCAL fencegw.tokens = 'account/%s=%s'", account, lb.Token),
			fmt.Sprintf("UPDATE demo.accounts SET balance_cents = balance_cents - 300 WHERE id = '%s'", account),
			fmt.Sprintf("INSERT INTO demo.write_log (resource, epoch, revision, operation, account, amount_cents) VALUES ('%s', %d, %d, 'debit', '%s', -300)",
				resource, tok.Epoch, tok.Revision, account),
		} {
			if _, err := tx.Exec(ctx, sql); err != nil {
				b <- fmt.Errorf("%s: %w", sql, err)
				return
			}
		}
		b <- tx.Commit(ctx)
	}()
	if !testenv.WaitFor(time.Minute, func() bool { return testenv.LockWaiters(f.gw.Pool, "%fence_session%") == 1 }) {
		t.Fatal("B's transaction never waited for A's fence row")
	}

	a.thaw()
	if code := a.commit(); code != "FG409" {
		t.Fatalf("A's COMMIT after its lease ended: SQLSTATE %q, want FG409", code)
	}
	if err := <-b; err != nil {
		t.Fatalf("B's transaction: %v", err)
	}
	tb := mustToken(lb.Token)
	want := fmt.Sprintf("balance %d, log [%d:%d debit -300]", balanceOf(t, before)-300, tb.Epoch, tb.Revision)
	if got := f.state(account); got != want {
		t.Fatalf("%s, want %s: only B's write", got, want)
	}
	f.release(billing, lb)
}

// TestGCPauseTimelinePgx: the timeline with A on pgx.
func TestGCPauseTimelinePgx(t *testing.T) {
	f := newFront(t)
	timeline(t, f, "acct-21", &pgxHolder{f: f})
}

package sqlfront_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/sqlfront"
)

// TestFenceInLineWithThePipeline: in the extended protocol the front's
// fence goes to PostgreSQL in line with the client's messages that
// follow, without waiting for its answer. What a driver pipelines after
// it must see exactly what it would see had the front waited: a stale
// token fails the fence with FG409 naming the fence and every statement
// after it up to the Sync is skipped; a COMMIT in the same pipeline is
// still checked against the holder (here the view names a newer one:
// FG409, rolled back); and nothing is written by either.
func TestFenceInLineWithThePipeline(t *testing.T) {
	ctx := context.Background()
	var view viewSays
	asked := 0
	f := newFront(t, func(c *sqlfront.Config) { c.Holders = &viewHandle{get: func() viewSays { return view }} })
	const account, resource = "acct-81", "account/acct-81"
	old := f.lease(billing, resource, 30, 0)
	f.release(billing, old)
	cur := f.lease(billing, resource, 30, 0)
	conn := f.connect(billing)
	setTokens := "SELECT set_config('fencegw.tokens', $1, true)"
	debit := "UPDATE demo.accounts SET balance_cents = balance_cents - $1 WHERE id = $2"

	// The holder's own pipelined write lands, so that the fence is at cur.
	view = viewSays{tok: mustToken(cur.Token), held: true, known: true, asked: &asked}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(setTokens, resource+"="+cur.Token)
	b.Queue(debit, 1, account)
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		t.Fatalf("the holder's pipelined write: %v", err)
	}
	before := f.state(account)

	b = &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(setTokens, resource+"="+old.Token)
	b.Queue(debit, 1, account)
	b.Queue("SELECT 1")
	br := conn.SendBatch(ctx, b)
	_, eBegin := br.Exec()
	_, eFence := br.Exec()
	_, eDebit := br.Exec()
	_, eAfter := br.Exec()
	br.Close()
	if eBegin != nil || sqlState(eFence) != "FG409" || !strings.Contains(eFence.Error(), "the fence is at "+unsigned(t, cur.Token)) || eDebit == nil || eAfter == nil {
		t.Fatalf("a stale token in a pipeline: BEGIN %v, fence %v, debit %v, after %v; want ok, FG409 naming the fence, skipped, skipped", eBegin, eFence, eDebit, eAfter)
	}
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if after := f.state(account); after != before {
		t.Fatalf("a stale token's pipeline wrote: %s, was %s", after, before)
	}

	// A token the authority refuses (unsigned), in line: FG403 before
	// PostgreSQL sees a fence, the rest skipped, nothing written.
	b = &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(setTokens, resource+"="+unsigned(t, cur.Token))
	b.Queue(debit, 1, account)
	br = conn.SendBatch(ctx, b)
	_, eBegin = br.Exec()
	_, eFence = br.Exec()
	_, eDebit = br.Exec()
	br.Close()
	if eBegin != nil || sqlState(eFence) != "FG403" || eDebit == nil {
		t.Fatalf("a refused token in a pipeline: BEGIN %v, fence %v, debit %v; want ok, FG403, skipped", eBegin, eFence, eDebit)
	}
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if after := f.state(account); after != before {
		t.Fatalf("a refused token's pipeline wrote: %s, was %s", after, before)
	}

	// The holder's token, and a newer holder by the time of the COMMIT,
	// which is queued in the same pipeline as the fence.
	newer := mustToken(cur.Token)
	newer.Revision += 1000
	view = viewSays{tok: newer, held: true, known: true, asked: &asked}
	b = &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(setTokens, resource+"="+cur.Token)
	b.Queue(debit, 1, account)
	b.Queue("COMMIT")
	err := conn.SendBatch(ctx, b).Close()
	if code := sqlState(err); code != "FG409" {
		t.Fatalf("a COMMIT pipelined behind its fence, a newer holder in view: %v, want FG409", err)
	}
	if after := f.state(account); after != before {
		t.Fatalf("a COMMIT the front could not vouch for wrote: %s, was %s", after, before)
	}
}

package sqlfront_test

// What PostgreSQL skips did not happen. The front reads a client's
// pipeline ahead of PostgreSQL's answers (the fence goes in line; a
// statement of the client's may fail): what it recorded of the messages
// PostgreSQL then skips after an error (a statement closed or parsed, a
// portal bound, the unnamed statement parsed again) must be taken back,
// or it judges later statements (is this one a COMMIT?) on a state
// PostgreSQL does not have.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/fencegw/fencegw/sqlfront"
)

const pipeSetTokens = "SELECT set_config('fencegw.tokens', $1, true)"

// pipelineFront is a front whose view of the holders the test sets, with
// the fence of resource at cur (the holder's own write landed), and old
// a stale token of it.
func pipelineFront(t *testing.T, account string) (f *front, view *viewSays, old, cur lease) {
	t.Helper()
	ctx := context.Background()
	asked := 0
	view = &viewSays{asked: &asked}
	f = newFront(t, func(c *sqlfront.Config) { c.Holders = &viewHandle{get: func() viewSays { return *view }} })
	resource := "account/" + account
	old = f.lease(billing, resource, 30, 0)
	f.release(billing, old)
	cur = f.lease(billing, resource, 30, 0)
	*view = viewSays{tok: mustToken(cur.Token), held: true, known: true, asked: &asked}
	// Simple queries: the parent commit hangs on a pgx batch of these.
	conn := f.connect(billing)
	for _, q := range []string{"BEGIN", fmt.Sprintf("SET LOCAL fencegw.tokens = '%s=%s'", resource, cur.Token),
		fmt.Sprintf("UPDATE demo.accounts SET balance_cents = balance_cents - 1 WHERE id = '%s'", account), "COMMIT"} {
		if _, err := conn.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("the holder's write: %s: %v", q, err)
		}
	}
	return f, view, old, cur
}

func codes(errs []pgproto3.ErrorResponse) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Code)
	}
	return out
}

// TestClosedCommitStatementAfterFailedInlineFence: a client's
// prepared COMMIT ("c") is closed in the same pipeline as a fence that
// fails (a stale token). PostgreSQL skips the Close (it follows an
// error), so "c" still exists; the front, which handled the Close before
// it heard of the fence's failure, forgot that "c" commits. A later
// fenced transaction committed through "c" is then not checked: the view
// names a newer holder, and the COMMIT goes through and writes.
func TestClosedCommitStatementAfterFailedInlineFence(t *testing.T) {
	const account = "acct-91"
	resource := "account/" + account
	f, view, old, cur := pipelineFront(t, account)
	r := f.login(billing)
	r.send(&pgproto3.Parse{Name: "c", Query: "COMMIT"}, &pgproto3.Parse{Name: "b", Query: "BEGIN"},
		&pgproto3.Parse{Name: "tk", Query: pipeSetTokens}, &pgproto3.Sync{})
	if errs := r.until(ready); len(errs) != 0 {
		t.Fatalf("prepare: %v", codes(errs))
	}

	// One pipeline: BEGIN, the stale fence (fails), Close of "c": skipped.
	r.send(&pgproto3.Bind{PreparedStatement: "b"}, &pgproto3.Execute{}, &pgproto3.Flush{},
		&pgproto3.Bind{PreparedStatement: "tk", Parameters: [][]byte{[]byte(resource + "=" + old.Token)}}, &pgproto3.Execute{},
		&pgproto3.Close{ObjectType: 'S', Name: "c"}, &pgproto3.Sync{})
	if errs := r.until(ready); len(errs) != 1 || errs[0].Code != "FG409" {
		t.Fatalf("a stale fence in a pipeline: %v, want FG409", codes(errs))
	}
	commitThroughC(t, f, r, view, account, cur)
}

// TestTokensStatementParsedAfterFailedInlineFence: a statement of
// the front's own (one naming fences) parsed in the same pipeline as a
// fence that fails is skipped by PostgreSQL's rules (a Parse after an
// error, before the Sync, does nothing), but the front recorded it: the
// client's Parse of it again is refused as "already exists".
func TestTokensStatementParsedAfterFailedInlineFence(t *testing.T) {
	const account = "acct-92"
	resource := "account/" + account
	f, _, old, _ := pipelineFront(t, account)
	r := f.login(billing)
	if errs := r.query("BEGIN"); len(errs) != 0 {
		t.Fatal(codes(errs))
	}
	r.send(&pgproto3.Parse{Name: "tk", Query: pipeSetTokens},
		&pgproto3.Bind{PreparedStatement: "tk", Parameters: [][]byte{[]byte(resource + "=" + old.Token)}}, &pgproto3.Execute{},
		&pgproto3.Parse{Name: "tk2", Query: pipeSetTokens}, &pgproto3.Sync{})
	if errs := r.until(ready); len(errs) != 1 || errs[0].Code != "FG409" {
		t.Fatalf("a stale fence in a pipeline: %v, want FG409", codes(errs))
	}
	if errs := r.query("ROLLBACK"); len(errs) != 0 {
		t.Fatal(codes(errs))
	}
	// As PostgreSQL would: "tk2" was never created.
	r.send(&pgproto3.Parse{Name: "tk2", Query: pipeSetTokens}, &pgproto3.Sync{})
	if errs := r.until(ready); len(errs) != 0 {
		t.Fatalf("Parse of tk2, which the failed pipeline never created: %v %v", codes(errs), errs)
	}
}

// TestUnnamedStatementAfterFailedInlineFence: the client has an
// unnamed statement; a pipeline fences (in line: the front's statement
// replaces the unnamed one in PostgreSQL) with a stale token and then
// binds the unnamed statement, for which the front parses the client's
// statement again first; PostgreSQL skips that Parse (after the fence's
// error) but the front counts it done. The client's next Bind of its
// unnamed statement then binds the front's fence statement.
func TestUnnamedStatementAfterFailedInlineFence(t *testing.T) {
	const account = "acct-93"
	resource := "account/" + account
	f, _, old, _ := pipelineFront(t, account)
	r := f.login(billing)
	r.send(&pgproto3.Parse{Name: "b", Query: "BEGIN"}, &pgproto3.Parse{Name: "rb", Query: "ROLLBACK"},
		&pgproto3.Parse{Name: "tk", Query: pipeSetTokens},
		&pgproto3.Parse{Name: "", Query: "SELECT $1::int + 1"}, &pgproto3.Sync{})
	if errs := r.until(ready); len(errs) != 0 {
		t.Fatalf("prepare: %v", codes(errs))
	}
	r.send(&pgproto3.Bind{PreparedStatement: "b"}, &pgproto3.Execute{}, &pgproto3.Flush{},
		&pgproto3.Bind{PreparedStatement: "tk", Parameters: [][]byte{[]byte(resource + "=" + old.Token)}}, &pgproto3.Execute{},
		&pgproto3.Bind{PreparedStatement: "", Parameters: [][]byte{[]byte("41")}}, &pgproto3.Execute{},
		&pgproto3.Sync{})
	if errs := r.until(ready); len(errs) != 1 || errs[0].Code != "FG409" {
		t.Fatalf("a stale fence in a pipeline: %v, want FG409", codes(errs))
	}
	r.send(&pgproto3.Bind{PreparedStatement: "rb"}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if errs := r.until(ready); len(errs) != 0 {
		t.Fatal(codes(errs))
	}
	// The client's unnamed statement, as PostgreSQL keeps it: 41 + 1.
	r.send(&pgproto3.Bind{PreparedStatement: "", Parameters: [][]byte{[]byte("41")}}, &pgproto3.Execute{}, &pgproto3.Sync{})
	var got []string
	var errs []string
	for {
		m := r.receive()
		switch m := m.(type) {
		case *pgproto3.DataRow:
			got = append(got, string(m.Values[0]))
		case *pgproto3.ErrorResponse:
			errs = append(errs, m.Code+" "+m.Message)
		}
		if ready(m) {
			break
		}
	}
	if len(errs) != 0 || strings.Join(got, ",") != "42" {
		t.Fatalf("the client's unnamed statement after a failed in-line fence: rows %v, errors %v; want 42", got, errs)
	}
}

// TestClosedCommitStatementAfterClientError is the same as
// TestClosedCommitStatementAfterFailedInlineFence with the client's
// own error (1/0) in place of the stale fence: the class predates the
// in-line fence (it failed on f8f5bd3 too), which added one more way in.
func TestClosedCommitStatementAfterClientError(t *testing.T) {
	const account = "acct-94"
	f, view, _, cur := pipelineFront(t, account)
	r := f.login(billing)
	r.send(&pgproto3.Parse{Name: "c", Query: "COMMIT"}, &pgproto3.Parse{Name: "z", Query: "SELECT 1/0"},
		&pgproto3.Parse{Name: "tk", Query: pipeSetTokens}, &pgproto3.Sync{})
	if errs := r.until(ready); len(errs) != 0 {
		t.Fatalf("prepare: %v", codes(errs))
	}
	if errs := r.query("BEGIN"); len(errs) != 0 {
		t.Fatal(codes(errs))
	}
	r.send(&pgproto3.Bind{PreparedStatement: "z"}, &pgproto3.Execute{},
		&pgproto3.Close{ObjectType: 'S', Name: "c"}, &pgproto3.Sync{})
	if errs := r.until(ready); len(errs) != 1 || errs[0].Code != "22012" {
		t.Fatalf("1/0 in a pipeline: %v", codes(errs))
	}
	commitThroughC(t, f, r, view, account, cur)
}

// TestInlineFenceEveryExecMode: pgx batches through the front in
// each query exec mode: a stale token fails its fence and what follows,
// the session stays usable, the holder's batch commits, and a COMMIT
// batched behind its fence with a newer holder in view is refused.
func TestInlineFenceEveryExecMode(t *testing.T) {
	ctx := context.Background()
	const account = "acct-95"
	resource := "account/" + account
	f, view, old, cur := pipelineFront(t, account)
	debit := "UPDATE demo.accounts SET balance_cents = balance_cents - $1 WHERE id = $2"
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe,
		pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg, err := pgx.ParseConfig(f.url(billing))
			if err != nil {
				t.Fatal(err)
			}
			cfg.DefaultQueryExecMode = mode
			conn, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			view.tok = mustToken(cur.Token)
			b := &pgx.Batch{}
			b.Queue("BEGIN")
			b.Queue(pipeSetTokens, resource+"="+old.Token)
			b.Queue(debit, 1, account)
			b.Queue("SELECT 1")
			br := conn.SendBatch(ctx, b)
			_, e0 := br.Exec()
			_, e1 := br.Exec()
			_, e2 := br.Exec()
			_, e3 := br.Exec()
			br.Close()
			if e0 != nil || sqlState(e1) != "FG409" || e2 == nil || e3 == nil {
				t.Fatalf("stale: %v / %v / %v / %v", e0, e1, e2, e3)
			}
			if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
			before := f.state(account)
			b = &pgx.Batch{}
			b.Queue("BEGIN")
			b.Queue(pipeSetTokens, resource+"="+cur.Token)
			b.Queue(debit, 1, account)
			b.Queue("COMMIT")
			if err := conn.SendBatch(ctx, b).Close(); err != nil {
				t.Fatalf("holder's batch: %v", err)
			}
			if f.state(account) == before {
				t.Fatal("the holder's batch wrote nothing")
			}
			before = f.state(account)
			newer := mustToken(cur.Token)
			newer.Revision += 1000
			view.tok = newer
			b = &pgx.Batch{}
			b.Queue("BEGIN")
			b.Queue(pipeSetTokens, resource+"="+cur.Token)
			b.Queue(debit, 1, account)
			b.Queue("COMMIT")
			if err := conn.SendBatch(ctx, b).Close(); sqlState(err) != "FG409" {
				t.Fatalf("COMMIT behind its fence, newer holder in view: %v", err)
			}
			if f.state(account) != before {
				t.Fatal("wrote past a newer holder")
			}
			var one int
			if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
				conn.Exec(ctx, "ROLLBACK")
				if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
					t.Fatalf("session after: %v", err)
				}
			}
		})
	}
}

// TestInlineFenceFlushOnlyAndOrder: Execute of a tokens portal
// followed by Flush alone is answered (no hang) and in order; two
// fences and a Describe in one pipeline come back in order, once each,
// with nothing of the front's own statement.
func TestInlineFenceFlushOnlyAndOrder(t *testing.T) {
	const account = "acct-96"
	resource := "account/" + account
	f, _, _, cur := pipelineFront(t, account)
	r := f.login(billing)
	if errs := r.query("BEGIN"); len(errs) != 0 {
		t.Fatal(codes(errs))
	}
	tok := [][]byte{[]byte(resource + "=" + cur.Token)}
	r.send(&pgproto3.Parse{Name: "tk", Query: pipeSetTokens}, &pgproto3.Bind{PreparedStatement: "tk", DestinationPortal: "p", Parameters: tok},
		&pgproto3.Execute{Portal: "p"}, &pgproto3.Flush{})
	var seq []string
	for len(seq) < 4 {
		seq = append(seq, fmt.Sprintf("%T", r.receive()))
	}
	if got := strings.Join(seq, " "); got != "*pgproto3.ParseComplete *pgproto3.BindComplete *pgproto3.DataRow *pgproto3.CommandComplete" {
		t.Fatalf("after Flush: %s", got)
	}
	r.send(&pgproto3.Execute{Portal: "p", MaxRows: 1}, &pgproto3.Describe{ObjectType: 'P', Name: "p"},
		&pgproto3.Bind{PreparedStatement: "tk", DestinationPortal: "q", Parameters: tok}, &pgproto3.Execute{Portal: "q"},
		&pgproto3.Execute{Portal: ""}, // no such portal: PostgreSQL's error
		&pgproto3.Describe{ObjectType: 'S', Name: "tk"}, &pgproto3.Sync{})
	seq = nil
	for {
		m := r.receive()
		seq = append(seq, strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3."))
		if ready(m) {
			break
		}
	}
	want := "DataRow CommandComplete RowDescription BindComplete DataRow CommandComplete ErrorResponse ReadyForQuery"
	if got := strings.Join(seq, " "); got != want {
		t.Fatalf("pipeline answers:\n got %s\nwant %s", got, want)
	}
}

// commitThroughC rolls back what r's session has open, then fences
// account with cur and debits it, has the view name a newer holder (the
// lease ended meanwhile), and commits through the client's prepared
// statement "c", which PostgreSQL still has: the front must know "c"
// commits, refuse the COMMIT (FG409) and write nothing.
func commitThroughC(t *testing.T, f *front, r *rawClient, view *viewSays, account string, cur lease) {
	t.Helper()
	if errs := r.query("ROLLBACK"); len(errs) != 0 {
		t.Fatalf("ROLLBACK: %v", codes(errs))
	}
	before := f.state(account)
	if errs := r.query("BEGIN"); len(errs) != 0 {
		t.Fatal(codes(errs))
	}
	r.send(&pgproto3.Bind{PreparedStatement: "tk", Parameters: [][]byte{[]byte("account/" + account + "=" + cur.Token)}}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if errs := r.until(ready); len(errs) != 0 {
		t.Fatalf("fence at cur: %v", codes(errs))
	}
	if errs := r.query(fmt.Sprintf("UPDATE demo.accounts SET balance_cents = balance_cents - 100 WHERE id = '%s'", account)); len(errs) != 0 {
		t.Fatalf("debit: %v", codes(errs))
	}
	newer := mustToken(cur.Token)
	newer.Revision += 1000
	view.tok = newer
	r.send(&pgproto3.Bind{PreparedStatement: "c"}, &pgproto3.Flush{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	errs := r.until(ready)
	if after := f.state(account); len(errs) != 1 || errs[0].Code != "FG409" || after != before {
		t.Fatalf("COMMIT through prepared statement \"c\" with a newer holder in view: errors %v (want FG409); account %s, was %s", codes(errs), after, before)
	}
}

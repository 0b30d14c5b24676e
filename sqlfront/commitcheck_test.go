package sqlfront_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/sqlfront"
	"github.com/fencegw/fencegw/tokens"
)

// viewSays is a view of the holders that answers the same for every
// resource: the front's decision at COMMIT is under test here, the
// view's own (authority's HolderView) in package authority.
type viewSays struct {
	tok         tokens.Token
	held, known bool
	asked       *int
}

func (v viewSays) Holder(string) (tokens.Token, bool, bool) {
	*v.asked++
	return v.tok, v.held, v.known
}

// TestCommitLooksHoldersUpInTheView: a COMMIT of a resource of
// validation "fence" takes the view's holder when the view knows it (a
// newer holder: FG409, rolled back, nothing written, though etcd still
// names the session's own lease), and reads etcd when the view does not
// know (the session's lease holds: committed).
func TestCommitLooksHoldersUpInTheView(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		known   bool
		code    string
		written bool
	}{
		{"the view knows a newer holder", true, "FG409", false},
		{"the view does not know", false, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := 0
			newer := func(tok tokens.Token) viewSays {
				tok.Revision += 1000
				return viewSays{tok: tok, held: true, known: tc.known, asked: &asked}
			}
			var view viewSays
			f := newFront(t, func(c *sqlfront.Config) { c.Holders = &viewHandle{get: func() viewSays { return view }} })
			account := "acct-71"
			if !tc.known {
				account = "acct-72"
			}
			before := f.state(account)
			l := f.lease(billing, "account/"+account, 30, 0)
			view = newer(mustToken(l.Token))
			tx := f.openDebit(billing, account, l.Token)
			if code := sqlState(tx.Commit(ctx)); code != tc.code {
				t.Fatalf("COMMIT: SQLSTATE %q, want %q", code, tc.code)
			}
			if asked != 1 {
				t.Fatalf("the view was asked %d times, want once", asked)
			}
			if written := f.state(account) != before; written != tc.written {
				t.Fatalf("written %v, want %v: %s", written, tc.written, f.state(account))
			}
		})
	}
}

// viewHandle lets the test decide the view's answer after the front
// starts, once the lease's token is known.
type viewHandle struct{ get func() viewSays }

func (h *viewHandle) Holder(r string) (tokens.Token, bool, bool) { return h.get().Holder(r) }

// openDebit begins a transaction on a connection of client's that fences
// account with token and debits it (debitSQL), and leaves it open; the
// test's end rolls it back if nothing else ended it.
func (f *front) openDebit(client, account, token string) pgx.Tx {
	f.t.Helper()
	ctx := context.Background()
	tx, err := f.connect(client).Begin(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { tx.Rollback(ctx) })
	for _, sql := range debitSQL(account, token) {
		if _, err := tx.Exec(ctx, sql); err != nil {
			f.t.Fatalf("%s: %v", sql, err)
		}
	}
	return tx
}

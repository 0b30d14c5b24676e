package sqlfront_test

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/sqlfront"
)

// turnsAre waits until the front's turns, held and waited for, are
// what want says of each client named ("held/waiting"), and fails if
// they never are.
func (f *front) turnsAre(want map[string]string) {
	f.t.Helper()
	var got map[string]string
	if !testenv.WaitFor(time.Minute, func() bool {
		held, waiting := f.srv.Turns()
		got = map[string]string{}
		for c := range want {
			got[c] = strconv.Itoa(held[c]) + "/" + strconv.Itoa(waiting[c])
		}
		return maps.Equal(got, want)
	}) {
		f.t.Fatalf("turns held/waiting %v, want %v", got, want)
	}
}

// holdTurn opens a transaction as client, which holds a turn until it
// ends.
func (f *front) holdTurn(client string) pgx.Tx {
	f.t.Helper()
	tx, err := f.connect(client).Begin(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), "SELECT 1"); err != nil {
		f.t.Fatal(err)
	}
	return tx
}

// TestOneClientCannotStarveAnother: with two turns, billing's two open
// transactions hold both and four more of its sessions wait for one;
// then a session of ledger's waits too. The next turn given back goes to
// ledger, which holds none, and its whole fenced transaction runs and
// commits while billing's four still wait, every one of them; they run
// once turns are given back to them. First come, first served, ledger
// would have waited behind all four.
func TestOneClientCannotStarveAnother(t *testing.T) {
	f := newFront(t, func(c *sqlfront.Config) {
		c.MaxConnections, c.MaxClientConnections, c.MaxTransactions, c.QueueTimeout = 20, 10, 2, 5*time.Minute
	})
	ctx := context.Background()
	const account, resource = "acct-61", "account/acct-61"
	l := f.lease(ledger, resource, 300, 0)
	before := f.state(account)

	open := []pgx.Tx{f.holdTurn(billing), f.holdTurn(billing)}
	f.turnsAre(map[string]string{billing: "2/0", ledger: "0/0"})
	queued := make(chan error, 4)
	for range 4 {
		conn := f.connect(billing)
		go func() {
			_, err := conn.Exec(ctx, "SELECT 1")
			queued <- err
		}()
	}
	f.turnsAre(map[string]string{billing: "2/4", ledger: "0/0"})
	began := make(chan error, 1)
	var tx pgx.Tx
	conn := f.connect(ledger)
	go func() {
		var err error
		tx, err = conn.Begin(ctx)
		began <- err
	}()
	f.turnsAre(map[string]string{billing: "2/4", ledger: "0/1"})

	if err := open[0].Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-began; err != nil {
		t.Fatalf("ledger's BEGIN: %v", err)
	}
	for _, s := range []string{"SET LOCAL fencegw.tokens = '" + resource + "=" + l.Token + "'", strings.Replace(debit, "%s", account, 1)} {
		if _, err := tx.Exec(ctx, s); err != nil {
			t.Fatalf("ledger's %q: %v", s, err)
		}
	}
	f.turnsAre(map[string]string{billing: "1/4", ledger: "1/0"}) // the whole of ledger's transaction in, all four of billing's still out
	if len(queued) != 0 {
		t.Fatal("a statement of billing's ran before ledger's transaction ended")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("ledger's COMMIT: %v", err)
	}
	if after := f.state(account); after == before {
		t.Fatal("ledger's transaction committed, and its debit is not there")
	}

	if err := open[1].Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if err := <-queued; err != nil {
			t.Fatalf("a statement of billing's that waited for its turn: %v", err)
		}
	}
	f.turnsAre(map[string]string{billing: "0/0", ledger: "0/0"})
}

// TestCloseEndsWaitingSessions: a session waiting for a turn when the
// front shuts down is told so at once (57P01), and the write it waited
// to send is not written.
func TestCloseEndsWaitingSessions(t *testing.T) {
	f := newFront(t, func(c *sqlfront.Config) { c.MaxTransactions, c.QueueTimeout = 1, 5*time.Minute })
	const account, resource = "acct-63", "account/acct-63"
	l := f.lease(ledger, resource, 300, 0)
	before := f.state(account)
	f.holdTurn(billing)
	waiter := f.dial()
	waiter.loginWith(ledger, "BEGIN; SET LOCAL fencegw.tokens = '"+resource+"="+l.Token+"'; "+strings.Replace(debit, "%s", account, 1)+"; COMMIT")
	f.turnsAre(map[string]string{billing: "1/0", ledger: "0/1"})
	f.srv.Close()
	if code := waiter.closedWith(); code != "57P01" {
		t.Fatalf("a session waiting for a turn at shutdown: closed with %q, want 57P01", code)
	}
	if after := f.state(account); after != before {
		t.Fatalf("%s, was %s: the waiting write was written", after, before)
	}
}

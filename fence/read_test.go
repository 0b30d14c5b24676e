package fence_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/outcome"
	"github.com/fencegw/fencegw/tokens"
)

// readOperations are reads over the demo's accounts besides its balance:
// both of a pair's, and one that calls a function the test defines.
const readOperations = `  pair:
    access: read
    resources:
      from: "account/{from}"
      to: "account/{to}"
    args:
      from: {type: string, max_length: 64, pattern: "acct-[0-9]+"}
      to: {type: string, max_length: 64, pattern: "acct-[0-9]+"}
    statements:
      - sql: SELECT sum(balance_cents) AS total FROM demo.accounts WHERE id IN (:from, :to)
  sneaky:
    access: read
    resource: account
    args:
      account: {type: string, max_length: 64, pattern: "acct-[0-9]+"}
    statements:
      - sql: SELECT demo.sneaky_write(:account)
`

func (d *db) read(writes ...fence.Write) (fence.ReadResult, error) {
	d.t.Helper()
	req, err := fence.NewRequest(writes, nil)
	if err != nil {
		return fence.ReadResult{}, err
	}
	return d.store.Read(context.Background(), req)
}

// TestReadUnderTheFence: a read with a token not older than the fence
// returns its rows and the fence; an older token is refused as stale with
// no rows; an equal token reads on a strict resource too; a resource never
// written has no fence and any token reads it; nothing is ever written.
func TestReadUnderTheFence(t *testing.T) {
	d := newDB(t, readOperations)
	if _, err := d.apply(nil, credit(d, "acct-40", 5)); err != nil {
		t.Fatal(err)
	}
	before := d.state()
	balance := func(account string, rev int64) fence.Write {
		return d.write("balance", `{"account": "`+account+`"}`, tok(rev))
	}
	for _, rev := range []int64{5, 6} {
		res, err := d.read(balance("acct-40", rev))
		if err != nil {
			t.Fatalf("read with 1:%d, the fence at 1:5: %v", rev, err)
		}
		if f, ok := res.Fence("account/acct-40"); !ok || f != tok(5) {
			t.Errorf("fence = %v %v, want 1:5", f, ok)
		}
		if rows := string(res.Results[0].Statements[0].Rows); !strings.Contains(rows, `"balance_cents":1001`) {
			t.Errorf("rows = %s, want acct-40's balance", rows)
		}
	}
	_, err := d.read(balance("acct-40", 4))
	var stale *fence.StaleTokenError
	if !errors.As(err, &stale) || stale.Current != tok(5) || stale.Presented != tok(4) {
		t.Fatalf("read with 1:4, the fence at 1:5: %v, want stale against 1:5", err)
	}
	if outcome.Of(err) != outcome.Refused {
		t.Errorf("a stale read's outcome: %v, want refused", outcome.Of(err))
	}
	res, err := d.read(balance("acct-41", 1))
	if err != nil {
		t.Fatalf("read of a resource never written: %v", err)
	}
	if _, ok := res.Fence("account/acct-41"); ok {
		t.Errorf("a resource never written has a fence")
	}
	var pre *fence.PreconditionError
	if _, err := d.read(balance("acct-999", 1)); !errors.As(err, &pre) {
		t.Errorf("a read whose expect_rows fails: %v, want a precondition error", err)
	}
	if after := d.state(); after != before {
		t.Fatalf("reads changed the database: %s -> %s", before, after)
	}
}

// TestReadOfSeveralResources: each role's token is held to its own fence.
func TestReadOfSeveralResources(t *testing.T) {
	d := newDB(t, readOperations)
	if _, err := d.apply(nil, credit(d, "acct-42", 7), credit(d, "acct-43", 3)); err != nil {
		t.Fatal(err)
	}
	pair := func(from, to int64) fence.Write {
		return d.write("pair", `{"from": "acct-42", "to": "acct-43"}`, tok(from), tok(to))
	}
	if _, err := d.read(pair(7, 3)); err != nil {
		t.Fatalf("read with both tokens current: %v", err)
	}
	_, err := d.read(pair(7, 2))
	var stale *fence.StaleTokenError
	if !errors.As(err, &stale) || stale.Role != "to" || stale.Current != tok(3) {
		t.Fatalf("read with to's token stale: %v, want stale naming role to", err)
	}
}

// TestAReadCannotWrite: a read runs in a read-only transaction, so a
// statement that calls a function which writes is refused by PostgreSQL,
// whatever the policy's check of its SQL could see.
func TestAReadCannotWrite(t *testing.T) {
	d := newDB(t, readOperations)
	if _, err := d.pool.Exec(context.Background(), `CREATE FUNCTION demo.sneaky_write(a text) RETURNS int LANGUAGE sql AS
		'UPDATE demo.accounts SET balance_cents = 0 WHERE id = a RETURNING 1'`); err != nil {
		t.Fatal(err)
	}
	before := d.state()
	_, err := d.read(d.write("sneaky", `{"account": "acct-44"}`, tokens.Token{Epoch: 1, Revision: 1}))
	if err == nil || outcome.Of(err) == outcome.Applied {
		t.Fatalf("a read calling a writing function: %v, want it refused", err)
	}
	if after := d.state(); after != before {
		t.Fatalf("a read wrote: %s -> %s", before, after)
	}
}

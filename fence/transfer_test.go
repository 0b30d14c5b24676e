package fence_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/fencegw/fencegw/fence"
)

func transfer(d *db, from, to string, cents int, fromTok, toTok int64) fence.Write {
	return d.write("transfer", fmt.Sprintf(`{"from": %q, "to": %q, "amount_cents": %d}`, from, to, cents), tok(fromTok), tok(toTok))
}

// TestTransferAdvancesBothFences: one transaction advances the fence of
// each role and applies the operation; the log holds one row per account.
func TestTransferAdvancesBothFences(t *testing.T) {
	d := newDB(t)
	if _, err := d.apply(nil, transfer(d, "acct-2", "acct-1", 300, 42, 57)); err != nil {
		t.Fatal(err)
	}
	if a, b := d.balance("acct-2"), d.balance("acct-1"); a != 700 || b != 1300 {
		t.Fatalf("balances %d, %d; want 700, 1300", a, b)
	}
	if f, g := d.fence("account/acct-2"), d.fence("account/acct-1"); f != "1:42#1" || g != "1:57#1" {
		t.Fatalf("fences %s, %s; want 1:42#1, 1:57#1", f, g)
	}
	var rows string
	err := d.pool.QueryRow(t.Context(), "SELECT string_agg(resource || ' ' || revision || ' ' || amount_cents, ', ' ORDER BY id) FROM demo.write_log").Scan(&rows)
	if err != nil || rows != "account/acct-2 42 -300, account/acct-1 57 300" {
		t.Fatalf("write log %q, %v", rows, err)
	}
}

// TestStaleOnEitherSideRefusesTheTransfer: a transfer whose token for
// either role is older than that account's fence is refused whole, naming
// the role, the resource and the current token; nothing is written.
func TestStaleOnEitherSideRefusesTheTransfer(t *testing.T) {
	for _, tt := range []struct {
		role             string
		fromTok, toTok   int64
		resource         string
		current, present int64
	}{
		{"from", 40, 60, "account/acct-3", 50, 40},
		{"to", 60, 40, "account/acct-4", 50, 40},
	} {
		t.Run(tt.role, func(t *testing.T) {
			d := newDB(t)
			// Both fences at 50.
			for _, acct := range []string{"acct-3", "acct-4"} {
				if _, err := d.apply(nil, d.write("credit", fmt.Sprintf(`{"account": %q, "amount_cents": 1}`, acct), tok(50))); err != nil {
					t.Fatal(err)
				}
			}
			before := d.state()
			_, err := d.apply(nil, transfer(d, "acct-3", "acct-4", 10, tt.fromTok, tt.toTok))
			var stale *fence.StaleTokenError
			if !errors.As(err, &stale) || stale.Role != tt.role || stale.Resource != tt.resource ||
				stale.Current != tok(tt.current) || stale.Presented != tok(tt.present) {
				t.Fatalf("err = %#v, want stale on role %s (%s at 1:%d, presented 1:%d)", err, tt.role, tt.resource, tt.current, tt.present)
			}
			if after := d.state(); after != before {
				t.Fatal("a refused transfer changed state")
			}
		})
	}
}

// TestOppositeTransfersNeverDeadlock: 16 writers move money among four
// accounts in both directions at once, each transfer holding both fences.
// Fence rows are locked in canonical order, so no transfer waits on
// another that waits on it: PostgreSQL reports no deadlock, every transfer
// applies, and the total is conserved.
func TestOppositeTransfersNeverDeadlock(t *testing.T) {
	d := newDB(t)
	accounts := []string{"acct-11", "acct-12", "acct-13", "acct-14"}
	const writers, each = 16, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range each {
				i := r.IntN(len(accounts))
				j := (i + 1 + r.IntN(len(accounts)-1)) % len(accounts)
				if _, err := d.apply(nil, transfer(d, accounts[i], accounts[j], 1, 1, 1)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a transfer failed: %v", err)
	}
	var total int64
	for _, a := range accounts {
		total += d.balance(a)
	}
	if total != int64(1000*len(accounts)) {
		t.Fatalf("total %d, want %d: money was made or lost", total, 1000*len(accounts))
	}
}

// TestRolesOfOneWriteMustDiffer: a transfer from an account to itself
// would fence one resource twice; it is refused before anything is sent.
func TestRolesOfOneWriteMustDiffer(t *testing.T) {
	d := newDB(t)
	_, err := fence.NewRequest([]fence.Write{transfer(d, "acct-5", "acct-5", 1, 42, 42)}, nil)
	if !errors.Is(err, fence.ErrConflict) {
		t.Fatalf("NewRequest = %v, want ErrConflict", err)
	}
}

// TestGuardAcceptsEveryFencedResource: with the guard installed, a
// transfer writes the rows of both its accounts; an operation fenced on
// two accounts that touches a third is refused whole.
func TestGuardAcceptsEveryFencedResource(t *testing.T) {
	d := newDB(t, `  skim:
    resources: {from: "account/{from}", to: "account/{to}"}
    args:
      from: {type: string}
      to: {type: string}
    statements:
      - sql: UPDATE demo.accounts SET balance_cents = balance_cents - 1 WHERE id = :from
      - sql: UPDATE demo.accounts SET balance_cents = balance_cents + 1 WHERE id = :to
      - sql: UPDATE demo.accounts SET balance_cents = balance_cents + 1 WHERE id = 'acct-99'
`)
	d.installGuard()
	if _, err := d.apply(nil, transfer(d, "acct-6", "acct-7", 5, 10, 10)); err != nil {
		t.Fatalf("transfer under the guard: %v", err)
	}
	before := d.state()
	_, err := d.apply(nil, d.write("skim", `{"from": "acct-6", "to": "acct-7"}`, tok(11), tok(11)))
	var constraint *fence.ConstraintError
	if !errors.As(err, &constraint) || constraint.Constraint != "fencegw_guard" {
		t.Fatalf("skim = %v, want the guard's refusal", err)
	}
	if after := d.state(); after != before {
		t.Fatal("a refused write changed state")
	}
}

// TestGuardScopesEachWriteOfABatch: in a batch, every fence advances first,
// but each write may touch only its own resources' rows: a write that
// touches the row of a resource only another write of the batch is fenced
// on is refused, and the batch with it.
func TestGuardScopesEachWriteOfABatch(t *testing.T) {
	d := newDB(t, `  credit_other:
    resource: account
    args: {account: {type: string}, other: {type: string}}
    statements:
      - sql: UPDATE demo.accounts SET balance_cents = balance_cents + 1 WHERE id IN (:account, :other)
        expect_rows: 2
`)
	d.installGuard()
	before := d.state()
	_, err := d.apply(nil, d.write("credit", `{"account": "acct-8", "amount_cents": 1}`, tok(20)),
		d.write("credit_other", `{"account": "acct-9", "other": "acct-8"}`, tok(20)))
	var constraint *fence.ConstraintError
	var we *fence.WriteError
	if !errors.As(err, &constraint) || constraint.Constraint != "fencegw_guard" || !errors.As(err, &we) || we.Index != 1 {
		t.Fatalf("batch = %v, want write 1 refused by the guard", err)
	}
	if after := d.state(); after != before {
		t.Fatal("a refused batch changed state")
	}
}

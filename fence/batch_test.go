package fence_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

func debit(d *db, account string, cents int, rev int64) fence.Write {
	return d.write("debit", fmt.Sprintf(`{"account": %q, "amount_cents": %d}`, account, cents), tok(rev))
}

// TestBatchIsAllOrNothing: a batch whose one write fails (a failed
// precondition, a stale token) writes nothing, and the error names that
// write; a batch without one writes everything, each fence once.
func TestBatchIsAllOrNothing(t *testing.T) {
	d := newDB(t)
	if _, err := d.apply(nil, debit(d, "acct-21", 1, 50)); err != nil { // acct-21's fence at 50
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		writes []fence.Write
		index  int
		check  func(error) bool
	}{
		{"overdraw", []fence.Write{debit(d, "acct-22", 10, 60), transfer(d, "acct-23", "acct-22", 5, 60, 60), debit(d, "acct-24", 5000, 60)}, 2,
			func(err error) bool { var p *fence.PreconditionError; return errors.As(err, &p) }},
		{"stale", []fence.Write{debit(d, "acct-22", 10, 60), debit(d, "acct-21", 10, 40)}, 1,
			func(err error) bool {
				var s *fence.StaleTokenError
				return errors.As(err, &s) && s.Resource == "account/acct-21"
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := d.state()
			_, err := d.apply(nil, tt.writes...)
			var we *fence.WriteError
			if !errors.As(err, &we) || we.Index != tt.index || !tt.check(err) {
				t.Fatalf("err = %v, want write %d's refusal", err, tt.index)
			}
			if after := d.state(); after != before {
				t.Fatal("a refused batch changed state")
			}
		})
	}
	// The same resource twice under one token: one fence advance.
	if _, err := d.apply(nil, debit(d, "acct-22", 10, 60), debit(d, "acct-22", 20, 60), transfer(d, "acct-23", "acct-22", 5, 60, 60)); err != nil {
		t.Fatal(err)
	}
	if got := d.balance("acct-22"); got != 975 {
		t.Fatalf("acct-22 = %d, want 975", got)
	}
	if f := d.fence("account/acct-22"); f != "1:60#1" {
		t.Fatalf("fence %s, want 1:60#1: advanced once per batch", f)
	}
}

// TestBatchConflicts: one resource under two tokens in one batch is
// refused before anything is sent.
func TestBatchConflicts(t *testing.T) {
	d := newDB(t)
	_, err := fence.NewRequest([]fence.Write{debit(d, "acct-25", 1, 60), debit(d, "acct-25", 1, 61)}, nil)
	if !errors.Is(err, fence.ErrConflict) {
		t.Fatalf("NewRequest = %v, want ErrConflict", err)
	}
	// The same E:R, once signed and once not: the refusal says that the
	// signatures differ, not that 1:60 differs from 1:60.
	signed := debit(d, "acct-25", 1, 60)
	signed.Tokens = []tokens.Token{{Epoch: 1, Revision: 60, Sig: tokens.Sig{1}}}
	_, err = fence.NewRequest([]fence.Write{debit(d, "acct-25", 1, 60), signed}, nil)
	if !errors.Is(err, fence.ErrConflict) || !strings.Contains(err.Error(), "signed differently") {
		t.Fatalf("NewRequest = %v, want ErrConflict saying the signatures differ", err)
	}
}

// TestBatchOnStrictResourceFencesOnce: on a strict resource a batch's
// writes of one resource share its token and the fence advances once, so
// the second write is not refused as a retry of the first.
func TestBatchOnStrictResourceFencesOnce(t *testing.T) {
	d := newDB(t)
	d.pol.Kinds["account"].Compare = policy.Strict
	defer func() { d.pol.Kinds["account"].Compare = policy.Monotonic }()
	if _, err := d.apply(nil, debit(d, "acct-26", 1, 70), debit(d, "acct-26", 2, 70)); err != nil {
		t.Fatalf("batch on a strict resource: %v", err)
	}
	_, err := d.apply(nil, debit(d, "acct-26", 1, 70))
	var stale *fence.StaleTokenError
	if !errors.As(err, &stale) {
		t.Fatalf("the token again, alone: %v, want stale", err)
	}
}

// TestKeyedBatchRunsOnce: a keyed batch is applied once; a retry gets the
// stored answer, and the key with other writes is a mismatch.
func TestKeyedBatchRunsOnce(t *testing.T) {
	d := newDB(t)
	key := &fence.IdempotencyKey{Client: "c", Scope: "batch", Value: "b1", Fingerprint: [32]byte{1}, Retention: 3600e9}
	first, err := d.apply(key, debit(d, "acct-27", 10, 80), debit(d, "acct-28", 10, 80))
	if err != nil || first.Replayed {
		t.Fatalf("first: %+v, %v", first, err)
	}
	again, err := d.apply(key, debit(d, "acct-27", 10, 80), debit(d, "acct-28", 10, 80))
	if err != nil || !again.Replayed || string(again.Body) != string(first.Body) {
		t.Fatalf("retry: %+v, %v; want the first answer replayed", again, err)
	}
	other := *key
	other.Fingerprint = [32]byte{2}
	var mismatch *fence.KeyMismatchError
	if _, err := d.apply(&other, debit(d, "acct-27", 99, 80)); !errors.As(err, &mismatch) {
		t.Fatalf("the key with other writes: %v, want a mismatch", err)
	}
	if got := d.balance("acct-27") + d.balance("acct-28"); got != 1980 {
		t.Fatalf("balances sum %d, want 1980: applied once", got)
	}
}

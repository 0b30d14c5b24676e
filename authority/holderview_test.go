package authority_test

import (
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// TestHolderViewIsNeverBehindThisReplica: a lock granted or released
// through this replica is in the view at once, or the view says it does
// not know; it never answers a holder older than the one this replica
// just granted, nor a holder after the release. Left alone, it catches
// up and knows.
func TestHolderViewIsNeverBehindThisReplica(t *testing.T) {
	a, _ := newAuthority(t)
	v := a.ViewHolders()
	t.Cleanup(v.Stop)
	const res = "view/this-replica"
	settled := func(want tokens.Token, wantHeld bool) bool {
		tok, held, known := v.Holder(res)
		return known && held == wantHeld && tok.Compare(want) == 0
	}
	if !testenv.WaitFor(30*time.Second, func() bool { return settled(tokens.Token{}, false) }) {
		t.Fatal("the view never knew the free lock")
	}
	for range 20 {
		l := acquire(t, a, res, 0)
		if tok, held, known := v.Holder(res); known && (!held || tok.Compare(l.Token) != 0) {
			t.Fatalf("just after the grant of %s the view knew holder %s (held %v)", l.Token, tok, held)
		}
		if err := a.Release(t.Context(), l.ID, ""); err != nil {
			t.Fatal(err)
		}
		if tok, held, known := v.Holder(res); known && held {
			t.Fatalf("just after the release of %s the view knew holder %s", l.Token, tok)
		}
	}
	l := acquire(t, a, res, 0)
	if !testenv.WaitFor(30*time.Second, func() bool { return settled(l.Token, true) }) {
		t.Fatalf("the view never knew holder %s", l.Token)
	}
}

// TestHolderViewSeesAnotherReplicasGrant: a lock granted through another
// replica shows in the view once its watch delivers it, and its end too.
func TestHolderViewSeesAnotherReplicasGrant(t *testing.T) {
	a, cli := newAuthority(t)
	other := authority.NewEtcd(cli, testenv.KEK())
	v := a.ViewHolders()
	t.Cleanup(v.Stop)
	const res = "view/other-replica"
	l := acquire(t, other, res, 0)
	if !testenv.WaitFor(30*time.Second, func() bool {
		tok, held, known := v.Holder(res)
		return known && held && tok.Compare(l.Token) == 0
	}) {
		t.Fatalf("the view never knew holder %s", l.Token)
	}
	if err := other.Release(t.Context(), l.ID, ""); err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(30*time.Second, func() bool {
		_, held, known := v.Holder(res)
		return known && !held
	}) {
		t.Fatal("the view never knew the lock released")
	}
}

// TestHolderViewStopped: a stopped view knows nothing.
func TestHolderViewStopped(t *testing.T) {
	a, _ := newAuthority(t)
	v := a.ViewHolders()
	if !testenv.WaitFor(30*time.Second, func() bool { _, _, known := v.Holder("view/stopped"); return known }) {
		t.Fatal("the view never followed etcd")
	}
	v.Stop()
	if _, _, known := v.Holder("view/stopped"); known {
		t.Fatal("a stopped view still answers")
	}
}

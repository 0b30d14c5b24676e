package authority

import (
	"errors"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/tokens"
)

// TestRetireStartsAgainAfterAGrantUnderItsKey: a grant recorded under a
// key between retire's read and its write (a replica whose keys are
// behind still signs with it) makes the write fail, and retire, reading
// again, keeps the key for that lease.
func TestRetireStartsAgainAfterAGrantUnderItsKey(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t) // retiring keys would refuse other tests' tokens
	a, stale := NewEtcd(cli, testenv.KEK()), NewEtcd(cli, testenv.KEK())
	if _, err := stale.ReloadKeys(t.Context()); err != nil { // the first key only
		t.Fatal(err)
	}
	if _, err := a.RotateKey(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	p, err := a.planRetirement(t.Context(), RetireOptions{Keep: 1})
	if err != nil || len(p.retire) != 1 {
		t.Fatalf("plan = %+v, %v; want the old key to go", p, err)
	}
	l, err := stale.Acquire(t.Context(), "retire/race", AcquireOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if done, err := a.commitRetirement(t.Context(), p, false); err != nil || done {
		t.Fatalf("retiring on a read older than a grant under the key = %t, %v; want it refused", done, err)
	}
	plan, err := a.RetireKeys(t.Context(), RetireOptions{Keep: 1})
	if !errors.Is(err, ErrKeyInUse) || len(plan) != 1 || plan[0].Retired || plan[0].Leases[0].ID != l.ID.String() {
		t.Fatalf("RetireKeys = %+v, %v; want the old key kept for the lease", plan, err)
	}
	if err := a.Validate(t.Context(), "retire/race", "", l.Token, tokens.ValidateFence); err != nil {
		t.Fatalf("the lease's token: %v", err)
	}
}

package authority_test

import (
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestObserveAllNamesTheHolder: the status page and inspect show which
// client holds each lock; "" for a lease taken without authentication.
func TestObserveAllNamesTheHolder(t *testing.T) {
	_, cli := testenv.PrivateEtcd(t)
	a := authority.NewEtcd(cli, testenv.KEK())
	for res, owner := range map[string]string{"owned/billing": "billing", "owned/nobody": ""} {
		if _, err := a.Acquire(t.Context(), res, authority.AcquireOptions{TTL: 30 * time.Second, Owner: owner}); err != nil {
			t.Fatal(err)
		}
	}
	locks, _, err := a.ObserveAll(t.Context(), "owned/", 10)
	if err != nil || len(locks) != 2 {
		t.Fatalf("ObserveAll = %+v, %v; want two locks", locks, err)
	}
	for _, st := range locks {
		if want := map[string]string{"owned/billing": "billing", "owned/nobody": ""}[st.Resource]; st.Holder.Owner != want {
			t.Errorf("%s held by %q, want %q", st.Resource, st.Holder.Owner, want)
		}
	}
}

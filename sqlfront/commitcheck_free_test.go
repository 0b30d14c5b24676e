package sqlfront_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/sqlfront"
)

// TestCommitReadsEtcdWhenTheViewSaysFree: the session's lease is revoked
// through this replica while another waits in line. The view then says
// nobody holds the lock (the holder record went with the lease; the
// waiter's grant is recorded only after its wait, a lock-delay's
// included: authority's TestHolderViewWaiterFirstInLine), but etcd names
// the waiter, whose key is first in line, with a newer token: the COMMIT
// is refused FG409, as it was when it read etcd, and nothing is written.
// A view that names no holder cannot tell a free lock from one whose
// next holder is first in line and not yet recorded: etcd is read.
func TestCommitReadsEtcdWhenTheViewSaysFree(t *testing.T) {
	ctx := context.Background()
	asked := 0
	var view viewSays
	f := newFront(t, func(c *sqlfront.Config) { c.Holders = &viewHandle{get: func() viewSays { return view }} })
	const account = "acct-74"
	const res = "account/" + account
	before := f.state(account)
	l := f.lease(billing, res, 30, 0)
	tx := f.openDebit(billing, account, l.Token)
	type answer struct {
		status int
		body   []byte
	}
	next := make(chan answer, 1)
	go func() {
		status, body := f.http(billing, http.MethodPost, "/v1/leases", `{"resource": "`+res+`", "ttl": 30, "wait": 60}`)
		next <- answer{status, body}
	}()
	if !testenv.WaitFor(30*time.Second, func() bool {
		st, err := f.auth.Observe(ctx, res)
		return err == nil && st.Waiting == 1
	}) {
		t.Fatal("the next lease never waited in line")
	}
	id, err := authority.ParseLeaseID(l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.auth.Revoke(ctx, id, "operator", "test"); err != nil {
		t.Fatal(err)
	}
	view = viewSays{known: true, asked: &asked} // free, as the view has it after the revoke
	if code := sqlState(tx.Commit(ctx)); code != "FG409" {
		t.Errorf("COMMIT after the revoke, a waiter first in line: SQLSTATE %q, want FG409", code)
	}
	if after := f.state(account); after != before {
		t.Errorf("written: %s, was %s", after, before)
	}
	a := <-next
	if a.status != http.StatusCreated {
		t.Fatalf("the next lease: %d %s", a.status, a.body)
	}
	var granted lease
	if err := json.Unmarshal(a.body, &struct {
		ID *string `json:"lease_id"`
	}{&granted.ID}); err != nil {
		t.Fatal(err)
	}
	f.release(billing, granted)
}

package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// pruneHarness is a gateway on a fresh database and an etcd of its own:
// the fence floor is below every live lease of the etcd, and the leases of
// the package's other tests would hold it down.
func pruneHarness(t *testing.T) *harness {
	t.Helper()
	_, cli := testenv.PrivateEtcd(t)
	h := newHarnessOn(t, demoPolicy(t, "monotonic"), cli)
	// The floor is raised only for the etcd the authority record vouches
	// for: the guard's check records its identity and revision.
	h.recordEtcd()
	return h
}

// recordEtcd runs the authority's check, which records etcd's identity
// and newest revision: the floor rises only for that etcd, and no higher.
func (h *harness) recordEtcd() {
	h.t.Helper()
	if err := h.node.Watchdog().Check(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// prune raises the floor and prunes, after the guard recorded etcd's
// newest revision (the floor stays at or below it).
func (h *harness) prune() (floor string, pruned int64) {
	h.t.Helper()
	h.recordEtcd()
	r, err := h.node.PruneFences(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return r.Floor.String(), r.Pruned
}

// TestPrunedFenceStillRefusesItsStaleToken: A writes, B succeeds A and
// writes, both leases end; pruning deletes the fence row, and A's token,
// which that row refused, is refused by the floor, with nothing written.
// Control: with the floor back at 1:0 (as if fence() did not check it),
// the same write is accepted: the pruned row's refusal lived on only in
// the floor.
func TestPrunedFenceStillRefusesItsStaleToken(t *testing.T) {
	h := pruneHarness(t)
	const account, resource = "acct-1", "account/acct-1"
	a := h.mustAcquire(resource, 30, 0)
	if r := h.write("debit", a.Token, debit(account, 1)); r.Status != http.StatusOK {
		t.Fatalf("A's debit: %d %s", r.Status, r.Body)
	}
	h.release(a)
	b := h.mustAcquire(resource, 30, 0)
	if r := h.write("debit", b.Token, debit(account, 1)); r.Status != http.StatusOK {
		t.Fatalf("B's debit: %d %s", r.Status, r.Body)
	}
	if r := h.write("debit", a.Token, debit(account, 1)); r.Status != http.StatusConflict {
		t.Fatalf("A's debit after B's, before pruning: %d %s, want 409", r.Status, r.Body)
	}
	h.release(b)

	floor, pruned := h.prune()
	if pruned != 1 || h.fence(resource) != "none" {
		t.Fatalf("pruned %d, fence %s; want the one row gone (floor %s)", pruned, h.fence(resource), floor)
	}
	if mustToken(t, floor).Compare(mustToken(t, b.Plain)) < 0 {
		t.Fatalf("floor %s below B's token %s with no lease alive", floor, b.Plain)
	}

	before := h.state()
	r := h.write("debit", a.Token, debit(account, 1))
	if r.Status != http.StatusConflict || r.Problem.Kind() != "stale-token" || r.Problem.CurrentToken != floor {
		t.Fatalf("A's debit after pruning: %d %s, want 409 stale-token at the floor %s", r.Status, r.Body, floor)
	}
	if after := h.state(); after != before {
		t.Fatalf("a refused write changed the database: %s -> %s", before, after)
	}
	// A read under the fence is refused alike: the resource has no row,
	// its fence is the floor.
	check := h.do(http.MethodPost, "/v1/fences/check", http.Header{"Fencing-Token": {a.Token}}, `{"resource": "`+resource+`"}`)
	if check.Status != http.StatusConflict || check.Problem.CurrentToken != floor {
		t.Fatalf("A's fence check after pruning: %d %s, want 409 at the floor %s", check.Status, check.Body, floor)
	}

	// The state's size is exported: every fencegw table's rows and bytes,
	// the floor and what was pruned.
	h.node.MeasureTables(context.Background())
	m := metricsText(t, h.base)
	for _, series := range []string{`fencegw_table_rows{table="fences"} 0`, `fencegw_table_rows{table="fence_floor"} 1`,
		`fencegw_table_rows{table="idempotency_keys"} 0`, `fencegw_table_bytes{table="fences"} `,
		`fencegw_fences_pruned_total 1`, `fencegw_fence_floor_revision ` + strings.TrimPrefix(floor, "1:")} {
		if !strings.Contains(m, series) {
			t.Errorf("metrics lack %s", series)
		}
	}

	// The control: lowering the floor is what removing its check does.
	if _, err := h.pool.Exec(context.Background(), "UPDATE fencegw.fence_floor SET epoch = 1, revision = 0"); err != nil {
		t.Fatal(err)
	}
	if r := h.write("debit", a.Token, debit(account, 1)); r.Status != http.StatusOK {
		t.Fatalf("control: A's debit with the floor at 1:0: %d %s, want it accepted (else the test above proves nothing)", r.Status, r.Body)
	}
}

// TestLiveLeasesWriteAfterPruning: pruning leaves every token a live lease
// holds or may still be granted writable: a holder that wrote, a holder
// that did not, a waiter granted after the prune, and a lease granted
// between etcd's read and the floor's raise (the race TokenFloor's floor
// is chosen for). Only the ended lease's token is refused.
func TestLiveLeasesWriteAfterPruning(t *testing.T) {
	h := pruneHarness(t)
	ctx := context.Background()
	ended := h.mustAcquire("account/acct-3", 30, 0)
	if r := h.write("debit", ended.Token, debit("acct-3", 1)); r.Status != http.StatusOK {
		t.Fatalf("ended lease's debit: %d %s", r.Status, r.Body)
	}
	h.release(ended)
	holder := h.mustAcquire("account/acct-2", 30, 0)
	if r := h.write("debit", holder.Token, debit("acct-2", 1)); r.Status != http.StatusOK {
		t.Fatalf("holder's debit: %d %s", r.Status, r.Body)
	}
	silent := h.mustAcquire("account/acct-4", 30, 0) // holds, has not written
	waited := make(chan lease, 1)
	go func() {
		l, r := h.acquire("account/acct-2", 30, 60)
		if r.Status != http.StatusCreated {
			t.Errorf("waiter: %d %s", r.Status, r.Body)
		}
		waited <- l
	}()
	if !testenv.WaitFor(30*time.Second, func() bool {
		st, err := h.auth.Observe(ctx, "account/acct-2")
		return err == nil && st.Waiting == 1
	}) {
		t.Fatal("the waiter never queued")
	}

	h.recordEtcd()
	floor, identity, err := h.auth.TokenFloor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	late := h.mustAcquire("account/acct-5", 30, 0) // granted after the read
	h.recordEtcd()                                 // the record now knows late's revision
	raised, err := h.store().RaiseFloor(ctx, floor, identity)
	if err != nil {
		t.Fatal(err)
	}
	pruned, err := h.store().PruneFences(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if raised != floor || pruned != 1 || h.fence("account/acct-3") != "none" || h.fence("account/acct-2") != holder.Plain {
		t.Fatalf("floor %s (read %s), pruned %d, fences acct-3 %s acct-2 %s: want the ended lease's row alone gone",
			raised, floor, pruned, h.fence("account/acct-3"), h.fence("account/acct-2"))
	}
	if r := h.write("debit", ended.Token, debit("acct-3", 1)); r.Status != http.StatusConflict {
		t.Errorf("ended lease's debit after pruning: %d %s, want 409", r.Status, r.Body)
	}
	for _, w := range []struct {
		who     string
		l       lease
		account string
	}{{"holder", holder, "acct-2"}, {"holder that had not written", silent, "acct-4"}, {"lease granted after etcd's read", late, "acct-5"}} {
		if r := h.write("debit", w.l.Token, debit(w.account, 1)); r.Status != http.StatusOK {
			t.Errorf("%s (token %s, floor %s): %d %s, want 200", w.who, w.l.Plain, raised, r.Status, r.Body)
		}
	}
	h.release(holder)
	w := <-waited
	if r := h.write("debit", w.Token, debit("acct-2", 1)); r.Status != http.StatusOK {
		t.Errorf("waiter granted after pruning (token %s, floor %s): %d %s, want 200", w.Plain, raised, r.Status, r.Body)
	}
	h.release(w)
	h.release(silent)
	h.release(late)
}

// TestPruningBesideWritesLosesNothing: workers take turns on accounts,
// each lease crediting its account a few times, while pruning runs again
// and again; every acknowledged credit is in the database, and no write
// with a live lease is refused. Workers keep going until pruning has
// deleted rows in the midst of their writes several times.
func TestPruningBesideWritesLosesNothing(t *testing.T) {
	h := pruneHarness(t)
	ctx := context.Background()
	const workers, creditsPerLease, minRounds, wantPrunes = 4, 3, 3, 5
	var (
		acked, refused atomic.Int64
		prunes         atomic.Int64 // rounds that deleted rows while workers wrote
		stop           = make(chan struct{})
		wg             sync.WaitGroup
	)
	before := h.balance("acct-60") + h.balance("acct-61") + h.balance("acct-62") + h.balance("acct-63")
	for i := range workers {
		account := []string{"acct-60", "acct-61", "acct-62", "acct-63"}[i]
		wg.Go(func() {
			for round := 0; ; round++ {
				select {
				case <-stop:
					if round >= minRounds {
						return
					}
				default:
				}
				if round > 2000 {
					t.Errorf("%s: pruning never deleted rows %d times beside the writes", account, wantPrunes)
					return
				}
				l, r := h.acquire("account/"+account, 30, 30)
				if r.Status != http.StatusCreated {
					t.Errorf("%s: acquire: %d %s", account, r.Status, r.Body)
					return
				}
				for range creditsPerLease {
					r := h.write("credit", l.Token, `{"account": "`+account+`", "amount_cents": 1}`)
					switch r.Status {
					case http.StatusOK:
						acked.Add(1)
					default:
						refused.Add(1)
						t.Errorf("%s: credit with live lease %s: %d %s", account, l.Plain, r.Status, r.Body)
					}
				}
				h.release(l)
			}
		})
	}
	pruned := make(chan struct{})
	go func() {
		defer close(pruned)
		for {
			select {
			case <-stop:
				return
			default:
			}
			r, err := h.node.PruneFences(ctx)
			if err != nil {
				t.Errorf("prune: %v", err)
				return
			}
			if r.Pruned > 0 && prunes.Add(1) == wantPrunes {
				close(stop)
				return
			}
			if err := h.node.Watchdog().Check(ctx); err != nil { // t.Fatal is not for this goroutine
				t.Errorf("authority check: %v", err)
				return
			}
		}
	}()
	<-pruned
	select {
	case <-stop:
	default:
		close(stop) // the pruner failed
	}
	wg.Wait()
	after := h.balance("acct-60") + h.balance("acct-61") + h.balance("acct-62") + h.balance("acct-63")
	var logged int64
	if err := h.pool.QueryRow(ctx, "SELECT count(*) FROM demo.write_log WHERE account = ANY($1)", []string{"acct-60", "acct-61", "acct-62", "acct-63"}).Scan(&logged); err != nil {
		t.Fatal(err)
	}
	if after-before != acked.Load() || logged != acked.Load() || refused.Load() != 0 {
		t.Fatalf("%d credits acknowledged, %d refused; balances rose by %d, %d rows logged: want every acknowledged credit, none refused",
			acked.Load(), refused.Load(), after-before, logged)
	}
	if prunes.Load() < wantPrunes {
		t.Fatalf("pruning deleted rows %d times, want %d", prunes.Load(), wantPrunes)
	}
}

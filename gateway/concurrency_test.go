package gateway_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/fencegw/fencegw/gateway"
)

// TestConcurrentWritersOneResource has 32 writers, each with its own real
// token for the same account, hammer it at once. Whatever interleaving
// PostgreSQL chooses, the committed writes (the write log, in commit order)
// must carry non-decreasing tokens, the fence must equal the highest of
// them, every refusal must be a stale token, and the balance must match
// exactly the acknowledged writes.
func TestConcurrentWritersOneResource(t *testing.T) {
	for _, tc := range []struct {
		name              string
		coalesce, guarded bool
	}{
		{"one transaction per write", false, false},
		{"coalesced", true, false},
		{"coalesced, on guarded tables", true, true}, // savepoints and the fence setting agree
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := strings.Replace(demoPolicy(t, "monotonic"), "compare: monotonic", fmt.Sprintf("compare: monotonic\n    coalesce: %t", tc.coalesce), 1)
			h := newHarness(t, pol)
			if tc.guarded {
				installGuard(t, h)
			}
			hammerOneResource(t, h, tc.coalesce)
			if tc.coalesce {
				sum, count := batchSizes(t, h)
				if sum <= count {
					t.Errorf("coalesced transactions: %g writes in %g transactions; want some transactions with several writes", sum, count)
				}
				t.Logf("coalesced %g writes into %g transactions", sum, count)
			}
		})
	}
}

// hammerOneResource starts every writer while the resource's fence row is
// held, and lets them go once each has its first write waiting (in
// PostgreSQL, or coalescing: queued behind the one that is): they then
// contend, in an order the scheduler picks, and a coalesced run certainly
// has batches of several writes, whatever the machine's speed.
func hammerOneResource(t *testing.T, h *harness, coalesce bool) {
	const (
		account, resource = "acct-31", "account/acct-31"
		writers           = 32
		writesEach        = 8
	)
	toks := make([]string, writers)
	for i := range toks {
		l := h.mustAcquire(resource, 5, 0)
		toks[i] = l.Token
		h.release(l)
	}
	if r := h.write("credit", toks[0], debit(account, 1)); r.Status != http.StatusOK { // the fence row exists from here on
		t.Fatalf("first credit: %d %s", r.Status, r.Body)
	}
	unblock := blockFence(t, h, resource)

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		accepted = map[string]int{}
		refused  int
	)
	for i := range writers {
		wg.Go(func() {
			for range writesEach {
				r := h.write("credit", toks[i], debit(account, 1))
				mu.Lock()
				switch {
				case r.Status == http.StatusOK:
					accepted[toks[i]]++
				case r.Status == http.StatusConflict && r.Problem.Kind() == "stale-token":
					refused++
				default:
					t.Errorf("writer %d: %d %s", i, r.Status, r.Body)
				}
				mu.Unlock()
			}
		})
	}
	waitOrFail(t, "every writer's first write to wait", func() bool {
		if coalesce {
			return h.lockWaiters("%fencegw.fence%") == 1 && gateway.QueuedWrites(h.gw, resource) == writers-1
		}
		// In PostgreSQL, or waiting for one of the pool's connections.
		return strings.Contains(metricsText(t, h.base), fmt.Sprintf("fencegw_writes_in_flight %d\n", writers))
	})
	unblock()
	wg.Wait()

	total := 1 // the first credit
	for _, n := range accepted {
		total += n
	}
	if total+refused != writers*writesEach+1 {
		t.Fatalf("accepted %d + refused %d != %d requests", total, refused, writers*writesEach+1)
	}
	highest := toks[writers-1]
	if accepted[highest] != writesEach {
		t.Errorf("the newest token %s had %d of %d writes accepted; nothing can be newer", highest, accepted[highest], writesEach)
	}
	if got := h.balance(account); got != int64(1000+total) {
		t.Errorf("balance = %d, want %d (1000 + acknowledged credits)", got, 1000+total)
	}

	rows, err := h.pool.Query(t.Context(), "SELECT epoch, revision FROM demo.write_log WHERE resource = $1 ORDER BY id", resource)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var prevEpoch, prevRev int64
	n := 0
	for rows.Next() {
		var e, r int64
		if err := rows.Scan(&e, &r); err != nil {
			t.Fatal(err)
		}
		if e < prevEpoch || (e == prevEpoch && r < prevRev) {
			t.Fatalf("committed write %d has token %d:%d after %d:%d: a stale write landed", n, e, r, prevEpoch, prevRev)
		}
		prevEpoch, prevRev = e, r
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != total {
		t.Fatalf("write log has %d rows, %d writes were acknowledged", n, total)
	}
	if got := h.fence(resource); got != plain(t, highest) {
		t.Fatalf("fence = %s, want the highest committed token %s", got, highest)
	}
	t.Logf("%d writes accepted, %d refused as stale", total, refused)
}

// batchSizes reads fencegw_transaction_requests's sum and count.
func batchSizes(t *testing.T, h *harness) (sum, count float64) {
	t.Helper()
	body := string(h.do(http.MethodGet, "/metrics", nil, "").Body)
	for _, line := range strings.Split(body, "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, _ := strconv.ParseFloat(value, 64)
		switch name {
		case "fencegw_transaction_requests_sum":
			sum = v
		case "fencegw_transaction_requests_count":
			count = v
		}
	}
	return sum, count
}

// TestCoalescedFailuresStayIsolated: twenty debits of 100 race on an
// account holding 1000 through one coalesced resource. Each runs in its own
// savepoint: exactly ten succeed, ten fail their row expectation, and the
// failures take nothing of the others with them.
func TestCoalescedFailuresStayIsolated(t *testing.T) {
	h := newHarness(t, strings.Replace(demoPolicy(t, "monotonic"), "compare: monotonic", "compare: monotonic\n    coalesce: true", 1))
	const account, resource = "acct-32", "account/acct-32"
	l := h.mustAcquire(resource, 10, 0)
	defer h.release(l)
	var (
		wg               sync.WaitGroup
		mu               sync.Mutex
		ok, precondition int
	)
	for range 20 {
		wg.Go(func() {
			r := h.write("debit", l.Token, debit(account, 100))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.Status == http.StatusOK:
				ok++
			case r.Status == http.StatusConflict && r.Problem.Kind() == "precondition-failed":
				precondition++
			default:
				t.Errorf("%d %s", r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	if ok != 10 || precondition != 10 {
		t.Fatalf("%d accepted, %d precondition-failed; want 10 and 10", ok, precondition)
	}
	if got := h.balance(account); got != 0 {
		t.Fatalf("balance = %d, want 0", got)
	}
	var n int
	if err := h.pool.QueryRow(t.Context(), "SELECT count(*) FROM demo.write_log WHERE account = $1", account).Scan(&n); err != nil || n != 10 {
		t.Fatalf("write log rows = %d, %v; want 10", n, err)
	}
	sum, count := batchSizes(t, h)
	t.Logf("coalesced %g writes into %g transactions", sum, count)
}

// TestCoalescedKeyedWrites: keyed writes are coalesced too, and a key sent
// twice at once — even into the same batch — executes once: the second is
// answered with the first's stored response after the commit.
func TestCoalescedKeyedWrites(t *testing.T) {
	h := newHarness(t, strings.Replace(demoPolicy(t, "monotonic"), "compare: monotonic", "compare: monotonic\n    coalesce: true", 1))
	const account, resource = "acct-33", "account/acct-33"
	l := h.mustAcquire(resource, 10, 0)
	defer h.release(l)
	var (
		wg             sync.WaitGroup
		mu             sync.Mutex
		fresh, replays int
		bodies         = map[string]map[string]bool{}
	)
	for i := range 16 {
		key := fmt.Sprintf("k33-%d", i%8)
		wg.Go(func() {
			r := h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, key), debit(account, 10))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.Status != http.StatusOK:
				t.Errorf("%s: %d %s", key, r.Status, r.Body)
			case r.Header.Get("Idempotent-Replayed") == "true":
				replays++
			default:
				fresh++
			}
			if bodies[key] == nil {
				bodies[key] = map[string]bool{}
			}
			bodies[key][string(r.Body)] = true
		})
	}
	wg.Wait()
	if fresh != 8 || replays != 8 {
		t.Fatalf("%d fresh, %d replayed; want 8 and 8", fresh, replays)
	}
	for key, b := range bodies {
		if len(b) != 1 {
			t.Errorf("key %s answered with %d different bodies", key, len(b))
		}
	}
	if got := h.balance(account); got != 1000-80 {
		t.Fatalf("balance = %d, want 920: each key debited once", got)
	}
	if r := h.do(http.MethodPost, "/v1/ops/debit", keyed(l.Token, "k33-0"), debit(account, 11)); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("reused key, other amount: %d %s, want 422", r.Status, r.Body)
	}
	sum, count := batchSizes(t, h)
	t.Logf("coalesced %g writes into %g transactions", sum, count)
}

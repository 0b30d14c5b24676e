package gateway_test

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestConcurrentWritersOneResource has 32 writers, each with its own real
// token for the same account, hammer it at once. Whatever interleaving
// PostgreSQL chooses, the committed writes (the write log, in commit order)
// must carry non-decreasing tokens, the fence must equal the highest of
// them, every refusal must be a stale token, and the balance must match
// exactly the acknowledged writes.
func TestConcurrentWritersOneResource(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
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

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		accepted = map[string]int{}
		refused  int
	)
	for i := range writers {
		wg.Go(func() {
			// Older tokens start a little earlier, so the run interleaves
			// many holders instead of the newest one winning at once.
			time.Sleep(time.Duration(i) * 3 * time.Millisecond)
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
	wg.Wait()

	total := 0
	for _, n := range accepted {
		total += n
	}
	if total+refused != writers*writesEach {
		t.Fatalf("accepted %d + refused %d != %d requests", total, refused, writers*writesEach)
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
	if got := h.fence(resource); got != highest {
		t.Fatalf("fence = %s, want the highest committed token %s", got, highest)
	}
	t.Logf("%d writes accepted, %d refused as stale", total, refused)
}

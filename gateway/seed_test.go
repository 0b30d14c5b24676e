package gateway_test

import (
	"net/http"
	"testing"
	"time"
)

// TestSeedDebitTable replays the seed chapter's debit table (§9.6.2) with
// two real tokens from etcd, A's older than B's:
//
//	B: debit(acct, 100, 42) -> ok, fence=42
//	A: debit(acct, 100, 41) -> stale
//	B: debit(acct,  50, 42) -> refused in strict mode, accepted in monotonic
func TestSeedDebitTable(t *testing.T) {
	for _, tt := range []struct {
		compare    string
		retryOK    bool
		wantStatus int
		wantFinal  int64
	}{
		{compare: "strict", retryOK: false, wantStatus: http.StatusConflict, wantFinal: 900},
		{compare: "monotonic", retryOK: true, wantStatus: http.StatusOK, wantFinal: 850},
	} {
		t.Run(tt.compare, func(t *testing.T) {
			h := newHarness(t, demoPolicy(t, tt.compare))
			account := "acct-1" + map[string]string{"strict": "1", "monotonic": "2"}[tt.compare]
			resource := "account/" + account

			a := h.mustAcquire(resource, 5, 0)
			h.release(a)
			b := h.mustAcquire(resource, 5, 0)
			defer h.release(b)
			if mustToken(t, a.Token).Compare(mustToken(t, b.Token)) >= 0 {
				t.Fatalf("tokens A=%s B=%s: want A older", a.Token, b.Token)
			}

			if r := h.write("debit", b.Token, debit(account, 100)); r.Status != http.StatusOK {
				t.Fatalf("B debit 100 with %s: %d %s", b.Token, r.Status, r.Body)
			}
			if got := h.fence(resource); got != b.Plain {
				t.Fatalf("fence after B = %s, want %s", got, b.Token)
			}

			before := h.state()
			r := h.write("debit", a.Token, debit(account, 100))
			if r.Status != http.StatusConflict || r.Problem.Kind() != "stale-token" {
				t.Fatalf("A debit 100 with %s: %d %s, want 409 stale-token", a.Token, r.Status, r.Body)
			}
			if r.Problem.PresentedToken != a.Plain || r.Problem.CurrentToken != b.Plain || r.Problem.Resource != resource {
				t.Errorf("problem = %+v, want presented %s current %s resource %s", r.Problem, a.Token, b.Token, resource)
			}
			if after := h.state(); after != before {
				t.Fatalf("A's refused write changed state: %s -> %s", before, after)
			}

			before = h.state()
			r = h.write("debit", b.Token, debit(account, 50))
			if r.Status != tt.wantStatus {
				t.Fatalf("B debit 50 again with %s: %d %s, want %d", b.Token, r.Status, r.Body, tt.wantStatus)
			}
			if !tt.retryOK {
				if r.Problem.Kind() != "stale-token" {
					t.Fatalf("strict retry problem = %q, want stale-token", r.Problem.Kind())
				}
				if after := h.state(); after != before {
					t.Fatalf("refused retry changed state: %s -> %s", before, after)
				}
			}
			if got := h.balance(account); got != tt.wantFinal {
				t.Fatalf("balance = %d, want %d", got, tt.wantFinal)
			}
		})
	}
}

// TestGCPauseTimeline is the seed's failure timeline with real leases: A
// holds the lock, "pauses" past its TTL (it simply sends nothing), its
// lease expires in etcd, B is granted the lock and writes, then A wakes up
// and sends its write. The fence refuses A; only B's write is in the
// database.
func TestGCPauseTimeline(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic"))
	const account, resource = "acct-21", "account/acct-21"

	a := h.mustAcquire(resource, 2, 0) // A: lock held, token read, then the pause

	start := time.Now()
	b := h.mustAcquire(resource, 10, 30) // B queues behind A; granted when A's lease expires
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("B was granted the lock after %s while A's lease was live", waited)
	}
	if r := h.write("debit", b.Token, debit(account, 300)); r.Status != http.StatusOK {
		t.Fatalf("B's write: %d %s", r.Status, r.Body)
	}

	r := h.write("debit", a.Token, debit(account, 100)) // A wakes up
	if r.Status != http.StatusConflict || r.Problem.Kind() != "stale-token" {
		t.Fatalf("A's late write: %d %s, want 409 stale-token", r.Status, r.Body)
	}
	if got := h.balance(account); got != 700 {
		t.Fatalf("balance = %d, want 700 (only B's debit)", got)
	}
	var n int
	var tok string
	if err := h.pool.QueryRow(t.Context(), "SELECT count(*), min(epoch || ':' || revision) FROM demo.write_log WHERE account = $1", account).Scan(&n, &tok); err != nil {
		t.Fatal(err)
	}
	if n != 1 || tok != b.Plain {
		t.Fatalf("write log has %d write(s), token %s; want B's one write with %s", n, tok, b.Token)
	}
	if r := h.do(http.MethodPost, "/v1/leases/"+a.ID+"/keepalive", nil, ""); r.Status != http.StatusNotFound {
		t.Fatalf("A's keepalive after expiry: %d %s, want 404", r.Status, r.Body)
	}
	h.release(b)
}

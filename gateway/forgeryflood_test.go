package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// floodPolicy declares two clients of the demo's writes: one floods, one
// writes honestly.
func floodPolicy(t testing.TB) string {
	return demoPolicy(t, "monotonic") + `
clients:
  flooder:
    token_sha256: ` + sha256Hex("flooder-secret") + `
    operations: [debit, credit]
  honest:
    token_sha256: ` + sha256Hex("honest-secret") + `
    operations: [debit, credit]
`
}

// forgedFlood sends writes of client flooder with forged tokens (its own
// token with another signature: no key verifies it, so each waits for a
// reload of the keys) from n goroutines until stop is closed; sent counts
// them. It returns when every goroutine has.
func forgedFlood(base, forged string, n int, stop <-chan struct{}, sent *atomic.Int64) (wait func()) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}, Timeout: time.Minute}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest(http.MethodPost, base+"/v1/ops/credit", strings.NewReader(debit("acct-93", 1)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer flooder-secret")
				req.Header.Set(gateway.TokenHeader, forged)
				if resp, err := hc.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				sent.Add(1)
			}
		}()
	}
	return func() { wg.Wait(); hc.CloseIdleConnections() }
}

// forge returns token with its signature's first character changed: as
// long as a real signature, verified by no key.
func forge(token string) string {
	i := strings.LastIndexByte(token, ':') + 1
	c := byte('A')
	if token[i] == 'A' {
		c = 'B'
	}
	return token[:i] + string(c) + token[i+1:]
}

// TestAForgeryFloodDoesNotStarveAnotherClient is issue 34's reproduction,
// bounded, on loopback: one client floods forged tokens from 64
// connections at a gateway of four turns at the gate, while another
// writes. Each forged token waits for a reload of the signing keys, which
// held its turn: the other client's writes waited behind the flood and
// were refused (503) once the queue timeout ran out. Now a wait on etcd
// gives the turn back, and turns go first to the client that holds the
// fewest: every one of the honest client's writes is answered 200. (How
// long they take under the flood is BenchmarkHonestWritesUnderAForgeryFlood's
// to report, not a test's to assert.)
func TestAForgeryFloodDoesNotStarveAnotherClient(t *testing.T) {
	h := newHarness(t, floodPolicy(t))
	gw := h.sibling(func(c *gateway.Config) {
		c.MaxInFlight = 4
		c.QueueTimeout = 2 * time.Second
	})
	honest := http.Header{"Authorization": {"Bearer honest-secret"}}
	flooder := http.Header{"Authorization": {"Bearer flooder-secret"}}
	own := acquireAs(t, gw, flooder, "account/acct-93")
	mine := acquireAs(t, gw, honest, "account/acct-92")

	stop := make(chan struct{})
	var sent atomic.Int64
	wait := forgedFlood(gw.base, forge(own), 64, stop, &sent)
	defer wait()
	defer close(stop)
	// The flood is on: its first answers are in, and as many wait for the
	// keys' reload as there are connections.
	if !testenv.WaitFor(time.Minute, func() bool { return sent.Load() >= 64 }) {
		t.Fatal("the flood never got going")
	}
	before := h.balance("acct-92")
	const writes = 30
	for i := range writes {
		hdr := honest.Clone()
		hdr.Set(gateway.TokenHeader, mine)
		if r := gw.do(http.MethodPost, "/v1/ops/credit", hdr, debit("acct-92", 1)); r.Status != http.StatusOK {
			t.Fatalf("the honest client's write %d during the flood: %d %s, want 200", i, r.Status, r.Body)
		}
	}
	if got := h.balance("acct-92"); got != before+writes {
		t.Fatalf("balance %d, want %d: every honest write applied once", got, before+writes)
	}
	if h.balance("acct-93") != 1000 {
		t.Fatal("a forged write was applied")
	}
}

// acquireAs takes a lease on resource as the client hdr authenticates,
// and returns its token; the lease is released when the test ends.
func acquireAs(t *testing.T, h *harness, hdr http.Header, resource string) string {
	t.Helper()
	r := h.do(http.MethodPost, "/v1/leases", hdr, fmt.Sprintf(`{"resource": %q, "ttl": 300}`, resource))
	if r.Status != http.StatusCreated {
		t.Fatalf("lease %s: %d %s", resource, r.Status, r.Body)
	}
	var l struct {
		ID    string `json:"lease_id"`
		Token string `json:"token"`
	}
	if err := json.Unmarshal(r.Body, &l); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.do(http.MethodDelete, "/v1/leases/"+l.ID, hdr, "") })
	return l.Token
}

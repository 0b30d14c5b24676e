package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestAuditFloodFromOneClient: one client floods the gateway with forged
// tokens over 200 resources. Its rows are bounded per second whatever the
// number of resources (10 a second past a burst of 50, 10 summaries a
// flush and one for the rest), yet account for every refusal; another
// client's refusal in the middle of the flood is recorded on its own, and
// the evidence from before the flood — the other client's and the
// flooder's own first refusal — is still there after the janitor ran.
func TestAuditFloodFromOneClient(t *testing.T) {
	h := newHarness(t, billingPolicy(t, "[debit, credit]")+`
  mallory:
    token_sha256: `+sha256Hex("mallory-secret")+`
    operations: [debit]
`)
	forged := func(bearer, token, account string) response {
		hdr := http.Header{"Authorization": {"Bearer " + bearer}, gateway.TokenHeader: {token}}
		return h.do(http.MethodPost, "/v1/ops/debit", hdr, debit(account, 1))
	}
	refused := func(r response) string {
		t.Helper()
		if r.Status != http.StatusForbidden || r.Problem.Kind() != "token-rejected" {
			t.Fatalf("a forged token: %d %s, want 403 token-rejected", r.Status, r.Body)
		}
		return r.Header.Get(gateway.RequestIDHeader)
	}
	earlier := map[string]string{
		"billing": refused(forged("billing-secret", "1:1", "acct-1")),
		"mallory": refused(forged("mallory-secret", "1:1", "acct-2")),
	}
	state := h.state()

	const flood, senders = 2000, 8
	start := time.Now()
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := s; i < flood; i += senders {
				if r := forged("mallory-secret", fmt.Sprintf("1:%d", i+2), fmt.Sprintf("acct-%d", 1000+i%200)); r.Status != http.StatusForbidden {
					t.Errorf("flood write %d: %d %s", i, r.Status, r.Body)
				}
			}
		})
	}
	during := refused(forged("billing-secret", "1:2", "acct-3"))
	wg.Wait()
	elapsed := time.Since(start)

	var rows, refusals int
	if !testenv.WaitFor(30*time.Second, func() bool {
		err := h.pool.QueryRow(context.Background(), `SELECT count(*), coalesce(sum(1 + suppressed), 0) FROM fencegw.rejections
			WHERE client = 'mallory' AND reason = 'token-rejected'`).Scan(&rows, &refusals)
		return err == nil && refusals == flood+1
	}) {
		t.Fatalf("the flooder's rows stand for %d refusals, want %d", refusals, flood+1)
	}
	flushes := int(math.Ceil(elapsed.Seconds())) + 2
	if bound := 50 + flushes*(10+10+1); rows > bound {
		t.Errorf("the flood of %d refusals over 200 resources in %s took %d rows, want at most %d", flood, elapsed, rows, bound)
	}

	h.store().Sweep(context.Background(), 24*time.Hour, slog.New(slog.DiscardHandler))
	for who, id := range map[string]string{"billing, before": earlier["billing"], "mallory, before": earlier["mallory"], "billing, during": during} {
		var suppressed int64
		err := h.pool.QueryRow(context.Background(), "SELECT suppressed FROM fencegw.rejections WHERE request_id = $1", id).Scan(&suppressed)
		if err != nil || suppressed != 0 {
			t.Errorf("the refusal of %s the flood: %v, suppressed %d; want its own row", who, err, suppressed)
		}
	}
	if h.state() != state {
		t.Error("the flood changed the database")
	}
}

package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/examples/internal/psp"
	"github.com/fencegw/fencegw/examples/internal/storytest"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/testgw"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// startGateway serves this example's policy on a fresh database, guarded:
// nothing but a fenced write of refund/{intent} can touch an intent's rows.
func startGateway(t *testing.T) *testgw.Gateway {
	t.Helper()
	return storytest.Gateway(t, "refund_schema_migrations", nil)
}

// testConfig is a run on intent 8842 at the test's timings.
func testConfig(t *testing.T, gatewayURL, pspURL string) config {
	return config{
		Gateway: gatewayURL, Intent: "8842", AmountCents: 2500, TTL: 10 * time.Second, Wait: 10 * time.Second,
		PSP: pspURL, PSPTimeout: 10 * time.Second, Log: t.Logf,
	}
}

// intentState is everything the database holds of intent 8842: its row,
// its ledger rows and its fence. Equal states mean nothing was written.
type intentState struct {
	Status, PSPRef, Token string // Token: of the write that last changed the row
	UpdatedAt             time.Time
	LedgerRows            int
	Ledger                string // per row: "psp_ref amount token"
	Fence                 string
	FenceWrites           int64
}

func readState(t *testing.T, pool *pgxpool.Pool) intentState {
	t.Helper()
	var s intentState
	err := pool.QueryRow(t.Context(), `
		SELECT i.status, coalesce(i.psp_ref, ''), i.epoch || ':' || i.revision, i.updated_at,
		       (SELECT count(*) FROM refund.ledger l WHERE l.intent_id = i.intent_id),
		       (SELECT coalesce(string_agg(l.psp_ref || ' ' || l.amount_cents || ' ' || l.epoch || ':' || l.revision, ', ' ORDER BY l.id), '')
		          FROM refund.ledger l WHERE l.intent_id = i.intent_id),
		       f.epoch || ':' || f.revision, f.writes
		  FROM refund.intents i JOIN fencegw.fences f ON f.resource = 'refund/' || i.intent_id
		 WHERE i.intent_id = '8842'`).
		Scan(&s.Status, &s.PSPRef, &s.Token, &s.UpdatedAt, &s.LedgerRows, &s.Ledger, &s.Fence, &s.FenceWrites)
	if err != nil {
		t.Fatalf("reading intent 8842: %v", err)
	}
	return s
}

// checkRecorded fails the test unless intent 8842 is done with pspRef,
// recorded once, by the holder of token.
func checkRecorded(t *testing.T, s intentState, pspRef, token string) {
	t.Helper()
	if s.Status != "done" || s.PSPRef != pspRef || s.Token != token {
		t.Errorf("intent: status %q, psp_ref %q, token %s; want done, %q, %s", s.Status, s.PSPRef, s.Token, pspRef, token)
	}
	if want := pspRef + " 2500 " + token; s.LedgerRows != 1 || s.Ledger != want {
		t.Errorf("ledger: %d rows %q; want 1 row %q", s.LedgerRows, s.Ledger, want)
	}
}

// TestRefund: one worker claims, has the provider refund once, records.
func TestRefund(t *testing.T) {
	gw := startGateway(t)
	fake, pspURL := storytest.Provider(t)
	cfg := testConfig(t, gw.URL, pspURL)
	rep, err := refundOnce(t.Context(), cfg, client.New(gw.URL), psp.NewClient(pspURL, cfg.PSPTimeout))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != outcomeRefunded || rep.PSPRef == "" || rep.Queried {
		t.Errorf("report %+v: want refunded, with a provider reference, not queried", rep)
	}
	if got, want := fake.Stats(), (psp.Stats{Charges: 1, Posts: 1}); got != want {
		t.Errorf("provider: %+v, want %+v", got, want)
	}
	checkRecorded(t, readState(t, gw.Pool), rep.PSPRef, rep.Token)
}

// TestAlreadyDone: a second run of a done intent learns it from its claim
// and returns the recorded reference without asking the provider.
func TestAlreadyDone(t *testing.T) {
	gw := startGateway(t)
	fake, pspURL := storytest.Provider(t)
	cfg := testConfig(t, gw.URL, pspURL)
	c, p := client.New(gw.URL), psp.NewClient(pspURL, cfg.PSPTimeout)
	first, err := refundOnce(t.Context(), cfg, c, p)
	if err != nil {
		t.Fatal(err)
	}
	second, err := refundOnce(t.Context(), cfg, c, p)
	if err != nil {
		t.Fatal(err)
	}
	if second.Outcome != outcomeAlreadyDone || second.PSPRef != first.PSPRef {
		t.Errorf("second run: %+v; want already-done with %q", second, first.PSPRef)
	}
	if got, want := fake.Stats(), (psp.Stats{Charges: 1, Posts: 1}); got != want {
		t.Errorf("provider: %+v, want %+v: the second run must not call it", got, want)
	}
	checkRecorded(t, readState(t, gw.Pool), first.PSPRef, first.Token)
}

// TestProviderTimeoutQueries: the provider makes the refund but does not
// answer in time; the worker asks it what it did instead of sending the
// refund again, and records that.
func TestProviderTimeoutQueries(t *testing.T) {
	gw := startGateway(t)
	fake, pspURL := storytest.Provider(t)
	fake.Stall = func(ctx context.Context, n int) {
		if n == 1 { // answer only once the worker has given up
			select {
			case <-ctx.Done():
			case <-t.Context().Done():
			}
		}
	}
	cfg := testConfig(t, gw.URL, pspURL)
	cfg.PSPTimeout = time.Second
	rep, err := refundOnce(t.Context(), cfg, client.New(gw.URL), psp.NewClient(pspURL, cfg.PSPTimeout))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != outcomeRefunded || !rep.Queried {
		t.Errorf("report %+v: want refunded, queried", rep)
	}
	if got, want := fake.Stats(), (psp.Stats{Charges: 1, Posts: 1, Gets: 1}); got != want {
		t.Errorf("provider: %+v, want %+v", got, want)
	}
	checkRecorded(t, readState(t, gw.Pool), rep.PSPRef, rep.Token)
}

//go:build linux

package recon_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/testgw"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// startGateway serves policy.yaml on a fresh database with the recon
// schema and its guard.
func startGateway(t *testing.T, config func(*gateway.Config)) *testgw.Gateway {
	return testgw.Start(t, testgw.Options{
		Policy: "policy.yaml", Migrations: "migrations", MigrationsTable: "recon_schema_migrations",
		Guard: true, Config: config,
	})
}

// TestStory tells the story twice on one build of fencegw and the job:
// with fencegw, then the control, with fencing off.
func TestStory(t *testing.T) {
	bin := build(t)
	t.Run("OneRunPerDay", func(t *testing.T) { oneRunPerDay(t, bin) })
	t.Run("WithoutFencingTheDayIsRecordedTwice", func(t *testing.T) { withoutFencing(t, bin) })
}

// oneRunPerDay is the chapter's opening story with fencegw: twelve
// pods compete for the reconciliation of 2026-10-18; A, frozen past its
// lease right after its first chunk, wakes once another pod has run the
// day and writes its next chunk. The fence refuses it, A's `fencegw lock`
// exits 3 (lease lost), every other pod exits 0 (one ran the day, the
// others found it done), and the ledger holds exactly one run's entries.
func oneRunPerDay(t *testing.T, bin binaries) {
	gw := startGateway(t, nil)
	s := tell(t, bin, gw)

	frozen, others := s.statuses()
	if frozen != 3 || slices.ContainsFunc(others, func(st int) bool { return st != 0 }) {
		t.Errorf("exit statuses: A %d, others %v; want A 3 (lease lost), others 0\n%s", frozen, others, s.outputs())
	}
	if ran, found := s.count("finished:"), s.count("already reconciled"); ran != 1 || found != podCount-2 {
		t.Errorf("%d pod(s) ran the day and %d found it done; want 1 and %d\n%s", ran, found, podCount-2, s.outputs())
	}
	if a := s.pods[s.frozen].out.String(); !strings.Contains(a, "refused by the fence") {
		t.Errorf("A's job does not say the fence refused it:\n%s", a)
	}
	// The gateway records a refusal after answering it: wait for the row.
	var refused int
	testenv.WaitFor(10*time.Second, func() bool {
		err := gw.Pool.QueryRow(t.Context(), `SELECT count(*) FROM fencegw.rejections
			WHERE resource = $1 AND operation = 'post_entries' AND reason = 'stale-token' AND presented = $2`,
			resource, s.frozenToken).Scan(&refused)
		if err != nil {
			t.Fatal(err)
		}
		return refused > 0
	})
	if refused != 1 {
		t.Errorf("fencegw.rejections holds %d refused post_entries of A's token %s, want 1", refused, s.frozenToken)
	}
	if err := readLedger(t, gw.Pool).oneRun(s.frozenToken); err != nil {
		t.Errorf("ledger: %v\n%s", err, s.outputs())
	}
}

// withoutFencing is the control: the same story against a gateway with
// fencing off. Nothing else in the design stops A: its late chunks land
// beside the finisher's entries, and the ledger's one-run check, the one
// oneRunPerDay passes, fails.
func withoutFencing(t *testing.T, bin binaries) {
	gw := startGateway(t, func(c *gateway.Config) { c.UnsafeNoFence = true })
	s := tell(t, bin, gw)

	l := readLedger(t, gw.Pool)
	err := l.oneRun(s.frozenToken)
	if err == nil {
		t.Fatalf("without fencing the ledger still holds exactly one run's entries: A's late chunks did not land\n%s", s.outputs())
	}
	if l.byToken[s.frozenToken] == 0 {
		t.Fatalf("the ledger fails the check (%v), but holds no entry of A's", err)
	}
	t.Logf("without fencing: %v", err)
}

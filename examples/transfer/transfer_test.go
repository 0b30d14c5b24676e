package main

import (
	"os"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/testgw"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// TestTransfers: 16 clients transfer among 20 accounts in both directions
// at once, each holding both accounts' leases. Every transfer is applied
// or refused for want of money; no deadlock or other error reaches a
// client; the total is conserved and the log balances.
func TestTransfers(t *testing.T) {
	gw := testgw.Start(t, testgw.Options{
		Policy: "../../testdata/demo/policy.yaml", Migrations: "../../testdata/demo/migrations",
		MigrationsTable: "demo_schema_migrations", Guard: true,
	})
	rep, err := run(t.Context(), config{Gateway: gw.URL, Accounts: 20, Clients: 16, Transfers: 320, TTL: 10 * time.Second, Wait: time.Minute, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.failures() > 0 || rep.Outcomes["ok"] == 0 {
		t.Fatalf("outcomes %v: want only ok and precondition-failed", rep.Outcomes)
	}
	var total, logged, applied int64
	err = gw.Pool.QueryRow(t.Context(), `SELECT
		(SELECT sum(balance_cents) FROM demo.accounts WHERE id IN (SELECT 'acct-' || i FROM generate_series(1, 20) i)),
		(SELECT coalesce(sum(amount_cents), 0) FROM demo.write_log),
		(SELECT count(*) / 2 FROM demo.write_log WHERE operation = 'transfer')`).Scan(&total, &logged, &applied)
	if err != nil {
		t.Fatal(err)
	}
	if total != 20*1000 || logged != 0 || applied != int64(rep.Outcomes["ok"]) {
		t.Fatalf("total %d (want 20000), log sums to %d (want 0), %d transfers logged (want %d)", total, logged, applied, rep.Outcomes["ok"])
	}
}

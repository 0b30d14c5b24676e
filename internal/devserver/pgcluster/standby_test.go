package pgcluster

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func exec1(t *testing.T, ctx context.Context, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestSynchronousStandbyFailover: a synchronous standby has every commit
// the primary acknowledged; after the primary is killed and the standby
// promoted, a multi-host URL finds the new primary, which takes writes.
func TestSynchronousStandbyFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	primary := startCluster(t, Options{})
	standby, err := primary.StartStandby(ctx, StandbyOptions{Name: "s1", Synchronous: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = standby.Stop() })
	if got := queryString(t, primary.URL(), "SELECT sync_state FROM pg_stat_replication WHERE application_name = 's1'"); got != "sync" {
		t.Fatalf("standby state %q, want sync", got)
	}
	exec1(t, ctx, primary.URL(), "CREATE TABLE acks (n int PRIMARY KEY)")
	for i := 0; i < 50; i++ {
		exec1(t, ctx, primary.URL(), "INSERT INTO acks VALUES ("+itoa(i)+")")
	}
	if got := queryString(t, standby.URL(), "SELECT pg_is_in_recovery()::text"); got != "true" {
		t.Fatalf("standby in recovery: %s", got)
	}
	both := MultiHostURL("postgres", primary, standby)
	if got := queryString(t, both, "SELECT current_setting('port')"); got != itoa(primary.Port()) {
		t.Fatalf("multi-host URL reached port %s, want the primary's %d", got, primary.Port())
	}

	primary.Kill()
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	// Every acknowledged commit is there: synchronous replication.
	if got := queryString(t, standby.URL(), "SELECT count(*)::text FROM acks"); got != "50" {
		t.Fatalf("after failover the standby has %s of 50 acknowledged rows", got)
	}
	if got := queryString(t, both, "SELECT current_setting('port')"); got != itoa(standby.Port()) {
		t.Fatalf("multi-host URL reached port %s after failover, want the promoted standby's %d", got, standby.Port())
	}
	exec1(t, ctx, both, "INSERT INTO acks VALUES (50)")
}

// TestAsynchronousStandbyLags: without Synchronous the primary does not
// wait: it acknowledges commits its standby may not have, which a
// failover then loses. Here the standby cannot reach the primary after
// its base backup, so the loss is certain rather than a matter of timing.
func TestAsynchronousStandbyLags(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	primary := startCluster(t, Options{})
	standby, err := primary.StartStandby(ctx, StandbyOptions{Name: "s2",
		// Nothing streams: the standby stays at its base backup.
		Settings: map[string]string{"primary_conninfo": "host=127.0.0.1 port=1 user=postgres"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = standby.Stop() })
	exec1(t, ctx, primary.URL(), "CREATE TABLE acks (n int PRIMARY KEY)")
	exec1(t, ctx, primary.URL(), "INSERT INTO acks VALUES (1)")
	primary.Kill()
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, standby.URL(), "SELECT (to_regclass('acks') IS NULL)::text"); got != "true" {
		t.Fatalf("the lagging standby has the table the primary acknowledged: %s", got)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

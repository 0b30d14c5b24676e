package pgcluster

import (
	"context"
	"testing"
	"time"
)

// TestRestart: a restarted server has what was committed before, on the
// same port and data, with its settings; and a synchronous standby
// follows the restarted primary again, so commits go on.
func TestRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	primary := startCluster(t, Options{Settings: map[string]string{"application_name": "restarted"}})
	standby, err := primary.StartStandby(ctx, StandbyOptions{Name: "r1", Synchronous: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = standby.Stop() })
	exec1(t, ctx, primary.URL(), "CREATE TABLE kept (n int); INSERT INTO kept VALUES (1)")
	port := primary.Port()
	if err := primary.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if primary.Port() != port {
		t.Fatalf("port %d after the restart, want %d", primary.Port(), port)
	}
	if got := queryString(t, primary.URL(), "SELECT count(*)::text FROM kept"); got != "1" {
		t.Fatalf("%s rows after the restart, want 1", got)
	}
	if got := queryString(t, primary.URL(), "SHOW application_name"); got != "restarted" {
		t.Fatalf("application_name %q after the restart, want its setting", got)
	}
	// A commit waits for the synchronous standby: it returns once the
	// standby follows the restarted primary.
	exec1(t, ctx, primary.URL(), "INSERT INTO kept VALUES (2)")
	if err := standby.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	exec1(t, ctx, primary.URL(), "INSERT INTO kept VALUES (3)")
	// Flushed on the standby (synchronous_commit on), applied soon after.
	for got := ""; got != "3"; got = queryString(t, standby.URL(), "SELECT count(*)::text FROM kept") {
		if ctx.Err() != nil {
			t.Fatalf("the restarted standby has %s rows, want 3", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

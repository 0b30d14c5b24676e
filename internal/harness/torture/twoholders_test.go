package torture

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/testgw"
	"github.com/fencegw/fencegw/internal/harness/torture/check"
	"github.com/fencegw/fencegw/tokens"
)

// tortureGateway serves the torture's policy on a fresh database holding
// its tables.
func tortureGateway(t *testing.T) *testgw.Gateway {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(policy(Config{Coalesce: true, GroupCommit: true})), 0o644); err != nil {
		t.Fatal(err)
	}
	gw := testgw.Start(t, testgw.Options{Policy: path})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, gw.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{schemaSQL, "INSERT INTO torture.balances VALUES ('res/" + wentBackResource + "', 0)"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	return gw
}

// TestLateHolderOutlivesItsOwnLease: a lease of the nemesis's own that
// outlived its round — taken, and never released nor kept alive, as when
// a fault broke the release or lost the acquire's answer — holds the late
// holder's resource. The next round waits it out and acts the late
// holder's timeline: T1's write acknowledged, T0's refused as stale.
// Before, with a 30 s TTL and no wait, such a lease locked the late
// holder out of its resource for most of a run.
func TestLateHolderOutlivesItsOwnLease(t *testing.T) {
	gw := tortureGateway(t)
	body, _ := json.Marshal(map[string]any{"resource": "res/" + wentBackResource, "ttl": probeTTL.Seconds()})
	resp, err := http.Post(gw.URL+"/v1/leases", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		t.Fatalf("the abandoned lease: %s", resp.Status)
	}

	history := filepath.Join(t.TempDir(), "history.jsonl")
	s, err := newTwoHolders([]string{gw.URL}, history, 9)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	answered := s.lateWrite(ctx)
	s.close()
	if !answered {
		t.Fatal("the late holder's round ended without its late write answered")
	}
	f, err := os.Open(history)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, err := check.ReadHistory(f)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, e := range events {
		if e.Type != check.TypeInvoke {
			outcomes = append(outcomes, strings.TrimPrefix(e.Intent, "nemesis-1-")+" "+e.Type+" "+e.Detail)
		}
	}
	if got, want := strings.Join(outcomes, "; "), "new-0 ok ; old-0 fail stale-token"; got != want {
		t.Fatalf("the round's writes: %s, want %s", got, want)
	}
}

// TestChurnSuccessor: a lease-churn holder the nemesis stopped holds
// churn/r0 — its keepalives no longer come. The successor is granted the
// lease once it expired, logs the grant and writes with it; the stopped
// holder's write, resumed, is refused as stale.
func TestChurnSuccessor(t *testing.T) {
	gw := tortureGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, gw.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, balancesSQL, 1, 0, []string{"churn"}); err != nil {
		t.Fatal(err)
	}
	keepalives := &keepaliveDrop{base: http.DefaultTransport, ids: map[string]bool{}}
	stopped, err := client.New(gw.URL, client.WithHTTPClient(&http.Client{Transport: keepalives})).Acquire(ctx, "churn/r0", client.AcquireOptions{TTL: churnTTL})
	if err != nil {
		t.Fatal(err)
	}
	keepalives.abandon(stopped) // what a stopped process sends

	dir := t.TempDir()
	s, err := newTwoHolders([]string{gw.URL}, historyPath(dir, 9), 9)
	if err != nil {
		t.Fatal(err)
	}
	s.family = "churn"
	if s.grants, err = newGrantLog(grantsPath(dir, 9), 9); err != nil {
		t.Fatal(err)
	}
	if !s.succeed(ctx, "churn/r0") {
		t.Fatal("the successor's write was not acknowledged")
	}
	s.close()
	_, err = client.New(gw.URL).Write(ctx, stopped.Token(), appendOp("churn"), map[string]any{"r": "r0", "intent": "late", "worker": 1})
	if stale := (*client.StaleTokenError)(nil); !errors.As(err, &stale) {
		t.Fatalf("the stopped holder's late write: %v, want a stale token", err)
	}
	grants, err := readLogs(dir, 10, grantsPath, check.ReadGrants, true)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := tokens.Parse(client.Unsigned(stopped.Token()))
	if len(grants) != 1 || grants[0].Resource != "churn/r0" || grants[0].Token.Compare(old) <= 0 {
		t.Fatalf("grants %+v, want the successor's on churn/r0, newer than %s", grants, old)
	}
}

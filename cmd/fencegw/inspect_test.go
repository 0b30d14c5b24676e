package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestInspect: inspect shows a fence, a lock with its waiter, a refused
// write and a bypass, filtered by resource prefix, as text and as JSON.
func TestInspect(t *testing.T) {
	dbURL := migrated(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	prefix := "inspect-" + strings.TrimPrefix(conn.Config().Database, "fencegw_test_") + "/"
	for _, sql := range []string{
		"SELECT fencegw.fence('" + prefix + "a', 1, 5, false)",
		"SELECT fencegw.fence('elsewhere/b', 1, 6, false)",
		"INSERT INTO fencegw.rejections (resource, operation, reason, presented, current) VALUES ('" + prefix + "a', 'debit', 'stale-token', '1:3', '1:5')",
		"BEGIN; SELECT fencegw.bypass('backfill\nfor ticket 9'); COMMIT",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	auth := authority.NewEtcd(testenv.EtcdClient(t), testenv.KEK())
	held, err := auth.Acquire(ctx, prefix+"a", authority.AcquireOptions{TTL: 30 * time.Second, Value: "worker-1\x1b[2J"}) // with a terminal escape
	if err != nil {
		t.Fatal(err)
	}
	defer auth.Release(ctx, held.ID, "")
	// A lock on a name that sorts between and needs escaping, outside the prefix.
	other, err := auth.Acquire(ctx, strings.TrimSuffix(prefix, "/")+" x", authority.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer auth.Release(ctx, other.ID, "")
	waitCtx, stopWaiting := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() {
		_, err := auth.Acquire(waitCtx, prefix+"a", authority.AcquireOptions{TTL: 30 * time.Second, Wait: time.Minute})
		waited <- err
	}()
	defer func() { stopWaiting(); <-waited }()
	// A semaphore of one permit, held, and a lease in its line.
	permit, err := auth.Acquire(ctx, prefix+"pool", authority.AcquireOptions{TTL: 30 * time.Second, Permits: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer auth.Release(ctx, permit.ID, "")
	permitWaited := make(chan error, 1)
	go func() {
		_, err := auth.Acquire(waitCtx, prefix+"pool", authority.AcquireOptions{TTL: 30 * time.Second, Wait: time.Minute, Permits: 1, Owner: "w"})
		permitWaited <- err
	}()
	defer func() { stopWaiting(); <-permitWaited }()

	run := func(args ...string) string {
		var out bytes.Buffer
		err := execute(ctx, &out, append([]string{"inspect", "--database-url", dbURL, "--etcd", strings.Join(testenv.EtcdEndpoints(), ","), "--resource", prefix}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	var in inspection
	if !testenv.WaitFor(10*time.Second, func() bool {
		in = inspection{}
		return json.Unmarshal([]byte(run("--json")), &in) == nil && len(in.Locks) == 2 && in.Locks[0].Waiters == 1 && len(in.PermitWaiters) == 1
	}) {
		t.Fatalf("never saw the lock with its waiter and the semaphore's: %+v, %+v", in.Locks, in.PermitWaiters)
	}
	if w := in.PermitWaiters[0]; w.Semaphore != prefix+"pool" || w.Client != "w" || w.LeaseID == "" || w.Since <= permit.Token.Revision {
		t.Errorf("permit waiter = %+v, want a lease of w in %spool's line", w, prefix)
	}
	if l := in.Locks[1]; l.Resource != permit.Resource || l.LeaseID != permit.ID.String() {
		t.Errorf("the semaphore's slot = %+v, want held by %s", l, permit.ID)
	}
	l := in.Locks[0]
	if l.Resource != prefix+"a" || l.Holder != held.Token.Unsigned() || l.LeaseID != held.ID.String() || l.TTL <= 0 || l.Value != "worker-1\x1b[2J" || l.Transitions != 1 {
		t.Errorf("lock = %+v, want held by %s (lease %s)", l, held.Token, held.ID)
	}
	if len(in.Fences) != 1 || in.Fences[0].Resource != prefix+"a" || in.Fences[0].Token.String() != "1:5" {
		t.Errorf("fences = %+v, want only %sa at 1:5 (the prefix filters the other)", in.Fences, prefix)
	}
	if len(in.Rejections) != 1 || in.Rejections[0].Reason != "stale-token" || in.Rejections[0].Presented != "1:3" {
		t.Errorf("rejections = %+v", in.Rejections)
	}
	if len(in.Bypasses) != 1 || !strings.HasPrefix(in.Bypasses[0].Why, "backfill") {
		t.Errorf("bypasses = %+v", in.Bypasses)
	}
	// Every table of the schema, with its rows (the prefix filters none:
	// sizes are the schema's) and bytes.
	sizes := map[string]fence.TableSize{}
	for _, ts := range in.Tables {
		sizes[ts.Table] = ts
	}
	for table, rows := range map[string]int64{"fences": 2, "rejections": 1, "bypass_log": 1, "idempotency_keys": 0, "fence_floor": 1, "authority": 1, "replicas": 0} {
		if got, ok := sizes[table]; !ok || got.Rows != rows || got.Estimated || got.Bytes <= 0 {
			t.Errorf("tables[%s] = %+v (listed: %v), want %d rows counted, bytes > 0", table, got, ok, rows)
		}
	}
	if in.FenceFloor != "1:0" {
		t.Errorf("fence floor = %s, want 1:0 (never raised)", in.FenceFloor)
	}
	text := run()
	for _, want := range []string{prefix + "a", held.Token.Unsigned().String(), "worker-1 [2J", "stale-token", "backfill for ticket 9", "fence floor 1:0", "fence_floor",
		"leases waiting for a semaphore's permit", in.PermitWaiters[0].LeaseID} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, held.Token.String()) {
		t.Errorf("inspect shows the holder's signed token, a capability:\n%s", text)
	}
	if strings.ContainsRune(text, 0x1b) {
		t.Errorf("a lock value's terminal escape reached the text:\n%q", text)
	}

	// Nothing under a prefix: every list is [], none null.
	var out bytes.Buffer
	if err := execute(ctx, &out, "inspect", "--database-url", dbURL, "--etcd", strings.Join(testenv.EtcdEndpoints(), ","), "--resource", prefix+"nothing/", "--json"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "null") {
		t.Errorf("inspect --json of nothing: %s, want [] for every empty list", out.String())
	}

	out.Reset()
	if err := execute(ctx, &out, "inspect", "--database-url", testenv.NewDatabase(t), "--etcd", "127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "fencegw migrate up") {
		t.Errorf("inspect of a database without the gateway's schema: %v, want a hint to migrate", err)
	}
	for _, args := range [][]string{{"extra"}, {"--limit", "0"}} {
		if err := execute(ctx, &bytes.Buffer{}, append([]string{"inspect", "--database-url", dbURL, "--etcd", "127.0.0.1:1"}, args...)...); !errors.Is(err, errUsage) {
			t.Errorf("inspect %q: %v, want a usage error", args, err)
		}
	}
}

// TestInspectWithEtcdAway: an etcd that does not answer costs inspect a
// few seconds, not its whole budget; what PostgreSQL said is shown, etcd's
// part is said to be missing, and the status is not 0.
func TestInspectWithEtcdAway(t *testing.T) {
	dbURL := migrated(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT fencegw.fence('away/a', 1, 5, false)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	ln := listenNowhere(t) // accepts, never answers: an etcd that is away, not refused
	for _, asJSON := range []bool{false, true} {
		var out bytes.Buffer
		start := time.Now()
		args := []string{"inspect", "--database-url", dbURL, "--etcd", ln, "--resource", "away/"}
		if asJSON {
			args = append(args, "--json")
		}
		err := execute(ctx, &out, args...)
		if took := time.Since(start); err == nil || took > 20*time.Second {
			t.Fatalf("inspect with etcd away: %v after %s, want an error well before its 30 s", err, took)
		}
		if asJSON {
			var in struct {
				Fences    []struct{ Resource string } `json:"fences"`
				EtcdError string                      `json:"etcd_error"`
			}
			if jerr := json.Unmarshal(out.Bytes(), &in); jerr != nil || len(in.Fences) != 1 || in.EtcdError == "" {
				t.Fatalf("--json with etcd away: %v %s", jerr, out.String())
			}
		} else if s := out.String(); !strings.Contains(s, "away/a") || !strings.Contains(s, "etcd: unavailable") {
			t.Fatalf("inspect with etcd away said:\n%s", s)
		}
	}
}

// listenNowhere is a TCP address that accepts connections and never
// answers on them, until the test ends.
func listenNowhere(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

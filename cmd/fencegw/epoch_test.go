package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

func TestEpochShowAndBump(t *testing.T) {
	ctx := context.Background()
	etcd, _ := testenv.PrivateEtcd(t) // its own: a bump must not leak into other tests
	dbURL := migrated(t)
	args := []string{"--database-url", dbURL, "--etcd", strings.Join(etcd.Endpoints(), ",")}
	// As the docs write it: the command, then the flags.
	if err := execute(ctx, io.Discard, append([]string{"epoch", "show"}, args...)...); err != nil {
		t.Fatalf("epoch show: %v", err)
	}
	for want := int64(2); want <= 3; want++ {
		if err := execute(ctx, io.Discard, append([]string{"epoch"}, append(args, "bump")...)...); err != nil {
			t.Fatalf("epoch bump: %v", err)
		}
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		var got int64
		err = conn.QueryRow(ctx, "SELECT max(epoch) FROM fencegw.authority").Scan(&got)
		conn.Close(ctx)
		if err != nil || got != want {
			t.Fatalf("PostgreSQL epoch after bump = %d, %v; want %d", got, err, want)
		}
	}
	if err := execute(ctx, io.Discard, append([]string{"epoch"}, append(args, "reset")...)...); !errors.Is(err, errUsage) {
		t.Fatalf("epoch reset = %v, want a usage error", err)
	}
}

// TestEpochBumpDryRun: --dry-run says which epoch the bump would start and
// changes nothing, in etcd or in PostgreSQL.
func TestEpochBumpDryRun(t *testing.T) {
	ctx := context.Background()
	etcd, cli := testenv.PrivateEtcd(t)
	dbURL := migrated(t)
	backends := []string{"--database-url", dbURL, "--etcd", strings.Join(etcd.Endpoints(), ",")}
	args := append([]string{"epoch", "bump", "--dry-run"}, backends...)
	if err := execute(ctx, io.Discard, append([]string{"epoch", "bump"}, backends...)...); err != nil { // a real bump first: epoch 2
		t.Fatalf("epoch bump: %v", err)
	}
	before, err := cli.Get(ctx, "/fencegw/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := execute(ctx, &out, args...); err != nil {
		t.Fatalf("epoch bump --dry-run: %v", err)
	}
	if !strings.Contains(out.String(), "dry run, nothing changed: the bump would start epoch 3") {
		t.Errorf("--dry-run said %q", out.String())
	}
	after, err := cli.Get(ctx, "/fencegw/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if after.Header.Revision != before.Header.Revision {
		t.Errorf("--dry-run wrote to etcd: revision %d -> %d", before.Header.Revision, after.Header.Revision)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var epoch int64
	if err := conn.QueryRow(ctx, "SELECT max(epoch) FROM fencegw.authority").Scan(&epoch); err != nil || epoch != 2 {
		t.Fatalf("PostgreSQL's epoch after --dry-run = %d, %v; want 2, as the real bump left it", epoch, err)
	}
}

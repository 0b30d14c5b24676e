package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/testenv"
)

func TestEpochShowAndBump(t *testing.T) {
	ctx := context.Background()
	etcd, _ := testenv.PrivateEtcd(t) // its own: a bump must not leak into other tests
	dbURL := migrated(t)
	args := []string{"--database-url", dbURL, "--etcd", strings.Join(etcd.Endpoints(), ",")}
	// As the README writes it: the command, then the flags.
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

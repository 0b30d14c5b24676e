package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/guard"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// TestGuardCommand: check fails until install, install says what it did and
// how to set privileges, remove undoes it; mistakes are usage errors.
func TestGuardCommand(t *testing.T) {
	dbURL := migrated(t)
	ctx := context.Background()
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := execute(ctx, &out, append([]string{"guard", "--database-url", dbURL, "--policy", "../../testdata/demo/policy.yaml"}, args...)...)
		return out.String(), err
	}
	if out, err := run("check"); !errors.Is(err, guard.ErrNotGuarded) || !strings.Contains(out, "no fencegw_guard trigger") {
		t.Fatalf("check before install: %v\n%s", err, out)
	}
	out, err := run("install")
	if err != nil || !strings.Contains(out, "guarded demo.accounts: rows of account") || !strings.Contains(out, "REVOKE INSERT, UPDATE, DELETE, TRUNCATE, TRIGGER ON demo.accounts, demo.write_log") {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if out, err := run("check"); err != nil || strings.Count(out, "guarded") != 2 {
		t.Fatalf("check after install: %v\n%s", err, out)
	}
	if _, err := run("remove"); err != nil {
		t.Fatal(err)
	}
	if _, err := run("check"); !errors.Is(err, guard.ErrNotGuarded) {
		t.Fatalf("check after remove: %v", err)
	}

	for _, args := range [][]string{{}, {"protect"}, {"install", "extra"}} {
		if _, err := run(args...); !errors.Is(err, errUsage) {
			t.Errorf("guard %q: %v, want a usage error", args, err)
		}
	}
	if err := execute(ctx, &bytes.Buffer{}, "guard", "--policy", "../../testdata/demo/policy.yaml", "check"); !errors.Is(err, errUsage) {
		t.Errorf("no database: %v, want a usage error", err)
	}
	bare := testenv.NewDatabase(t)
	if err := execute(ctx, &bytes.Buffer{}, "guard", "--database-url", bare, "--policy", "../../testdata/demo/policy.yaml", "install"); err == nil || !strings.Contains(err.Error(), "fencegw migrate up") {
		t.Errorf("install on a database without the gateway's schema: %v, want a hint to migrate", err)
	}
	if err := execute(ctx, &bytes.Buffer{}, "guard", "--database-url", dbURL, "--policy", "../../testdata/bench/policy.yaml", "install"); err == nil || !strings.Contains(err.Error(), "no guarded_tables") {
		t.Errorf("a policy without guarded tables: %v", err)
	}
}

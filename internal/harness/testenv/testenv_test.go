package testenv_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m))
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func exec1(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("exec %q: %v", sql, err)
	}
}

func TestNewDatabaseIsolatedAndDropped(t *testing.T) {
	var names []string
	t.Run("use", func(t *testing.T) {
		begin := time.Now()
		a, b := testenv.NewDatabase(t), testenv.NewDatabase(t)
		t.Logf("two NewDatabase calls took %s", time.Since(begin).Round(time.Millisecond))
		ca, cb := connect(t, a), connect(t, b)
		for _, c := range []*pgx.Conn{ca, cb} {
			var name string
			if err := c.QueryRow(context.Background(), "SELECT current_database()").Scan(&name); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(name, "fencegw_test_") {
				t.Errorf("database name %q lacks the fencegw_test_ prefix", name)
			}
			names = append(names, name)
		}
		if names[0] == names[1] {
			t.Fatalf("two NewDatabase calls returned the same database %s", names[0])
		}

		exec1(t, ca, "CREATE TABLE t (v int)")
		exec1(t, ca, "INSERT INTO t VALUES (1)")
		var inB *string
		if err := cb.QueryRow(context.Background(), "SELECT to_regclass('t')::text").Scan(&inB); err != nil {
			t.Fatal(err)
		}
		if inB != nil {
			t.Errorf("table created in %s is visible in %s", names[0], names[1])
		}
		// ca and cb stay open: the drop must cope with leaked connections.
	})

	admin := connect(t, testenv.AdminURL())
	var left int
	if err := admin.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_database WHERE datname = ANY($1)", names).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d of %v still exist after the test ended", left, names)
	}
}

func TestEtcdClient(t *testing.T) {
	if len(testenv.EtcdEndpoints()) == 0 {
		t.Fatal("no etcd endpoints")
	}
	cli := testenv.EtcdClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key := t.Name() + "/k"
	if _, err := cli.Put(ctx, key, "v"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	resp, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Errorf("Get %s = %v, want v", key, resp.Kvs)
	}
	cli.Close() // a second Close in cleanup must not fail the test
}

// TestRunFailsLoudly re-runs a database test of this binary against an
// unreachable server and expects exit status 1 with a message, not skips.
func TestRunFailsLoudly(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestNewDatabaseIsolatedAndDropped$")
	cmd.Env = append(os.Environ(), testenv.DatabaseURLEnv+"=postgres://postgres@127.0.0.1:1/postgres")
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() == 0 {
		t.Fatalf("exit = %v, want a failure; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), testenv.DatabaseURLEnv) || !strings.Contains(string(out), "cannot start") {
		t.Errorf("output does not explain the failure:\n%s", out)
	}
	t.Logf("child said: %s", strings.TrimSpace(string(out)))
}

package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var testSettings = map[string]string{"fsync": "off"}

func startCluster(t *testing.T, opts Options) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	begin := time.Now()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("Start (dir %q) took %s", opts.Dir, time.Since(begin).Round(time.Millisecond))
	t.Cleanup(func() { _ = c.Stop() })
	return c
}

func queryString(t *testing.T, url, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer conn.Close(ctx)
	var s string
	if err := conn.QueryRow(ctx, sql).Scan(&s); err != nil {
		t.Fatalf("query %q: %v", sql, err)
	}
	return s
}

func TestStartQueryStop(t *testing.T) {
	c := startCluster(t, Options{Settings: testSettings})

	if got := queryString(t, c.URL(), "SELECT current_setting('fsync')"); got != "off" {
		t.Errorf("fsync = %q, want off (Settings not applied)", got)
	}
	if got := queryString(t, c.URLFor("template1"), "SELECT current_database()"); got != "template1" {
		t.Errorf("URLFor(template1) connected to %q", got)
	}
	if want := "postgres://postgres@127.0.0.1:" + strconv.Itoa(c.Port()) + "/postgres?sslmode=disable"; c.URL() != want {
		t.Errorf("URL() = %q, want %q", c.URL(), want)
	}

	pid, dir := c.cmd.Process.Pid, c.dir
	begin := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("Stop took %s", time.Since(begin).Round(time.Millisecond))
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dir %s still exists after Stop (stat err %v)", dir, err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("postmaster pid %d still exists after Stop (kill 0: %v)", pid, err)
	}
	if groupAlive(pid) {
		t.Errorf("processes in group %d still exist after Stop", pid)
	}
	if conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port())), time.Second); err == nil {
		conn.Close()
		t.Errorf("port %d still answers after Stop", c.Port())
	}
}

// TestCallerDir covers a caller-owned Dir: it survives Stop, a restart
// reuses the data, an explicit busy port fails with the server's reason,
// and a caller Log writer receives the output.
func TestCallerDir(t *testing.T) {
	// Not t.TempDir: as root the server runs as another user, which must be
	// able to enter every ancestor, and t.TempDir nests under a 0700 dir.
	dir, err := os.MkdirTemp("", "pgcluster-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	c := startCluster(t, Options{Dir: dir, Settings: testSettings, Log: &log})
	if _, err := pgxExec(c.URL(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('still here')"); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := os.Stat(dir + "/data/PG_VERSION"); err != nil {
		t.Fatalf("caller Dir not kept after Stop: %v", err)
	}
	if !strings.Contains(log.String(), "database system is ready to accept connections") {
		t.Errorf("Log writer missed server output; got:\n%s", log.String())
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = Start(ctx, Options{Dir: dir, Port: busy.Addr().(*net.TCPAddr).Port, Log: &bytes.Buffer{}})
	if err == nil || !errors.Is(err, ErrServerExited) || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("Start on busy port: err = %v, want ErrServerExited quoting 'already in use'", err)
	}

	c2 := startCluster(t, Options{Dir: dir, Settings: testSettings, Log: &bytes.Buffer{}})
	if got := queryString(t, c2.URL(), "SELECT v FROM kept"); got != "still here" {
		t.Errorf("restart lost data: got %q", got)
	}
}

func TestStartFailureQuotesLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Start(ctx, Options{Settings: map[string]string{"no_such_setting": "1"}})
	if err == nil {
		t.Fatal("Start with a bogus setting succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"postgres.log", "no_such_setting"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not mention %q:\n%s", want, msg)
		}
	}
	// The temp dir Start created must be gone even though Start failed.
	logPath := msg[strings.Index(msg, "log /")+4:]
	logPath = logPath[:strings.Index(logPath, " ")]
	if _, err := os.Stat(logPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("failed Start left %s behind (stat err %v)", logPath, err)
	}
}

func TestStartCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Start(ctx, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with canceled ctx: err = %v, want context.Canceled", err)
	}
}

func pgxExec(url, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, sql)
	return tag.String(), err
}

// TestStopKillsWedgedServer freezes the postmaster so it cannot act on the
// fast-shutdown request, and expects Stop to SIGKILL the whole group.
func TestStopKillsWedgedServer(t *testing.T) {
	c := startCluster(t, Options{Settings: testSettings})
	defer func(d time.Duration) { stopTimeout = d }(stopTimeout)
	stopTimeout = 500 * time.Millisecond

	pid := c.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); !errors.Is(err, ErrKilled) {
		t.Errorf("Stop of a wedged server: err = %v, want ErrKilled", err)
	}
	if groupAlive(pid) {
		t.Errorf("processes in group %d survived the kill", pid)
	}
	if _, err := os.Stat(c.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dir %s survived Stop (stat err %v)", c.dir, err)
	}
}

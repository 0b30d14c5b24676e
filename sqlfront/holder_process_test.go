//go:build linux

package sqlfront_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/internal/harness/pause"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// processHolder is holder A in a process of its own, a PostgreSQL
// client that runs one statement per line of its input and answers
// "result SQLSTATE" (00000 for success); frozen with SIGSTOP, as a GC
// pause freezes a process.
type processHolder struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr testenv.Buffer
	// line is what the client is sent for a statement.
	line func(sql string) string
}

func startHolder(t *testing.T, line func(string) string, name string, args ...string) *processHolder {
	t.Helper()
	h := &processHolder{t: t, cmd: exec.Command(name, args...), line: line}
	h.cmd.Stderr = &h.stderr
	var err error
	if h.in, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.out = bufio.NewReader(stdout)
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = pause.Resume(h.cmd.Process.Pid)
		h.in.Close()
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait()
	})
	return h
}

// exec runs sql in the holder and returns its SQLSTATE, "" for success.
func (h *processHolder) exec(sql string) string {
	h.t.Helper()
	if _, err := io.WriteString(h.in, h.line(sql)); err != nil {
		h.t.Fatalf("%s: %v (stderr: %s)", sql, err, h.stderr.String())
	}
	for {
		l, err := h.out.ReadString('\n')
		if err != nil {
			h.t.Fatalf("%s: the holder's answer: %v (stderr: %s)", sql, err, h.stderr.String())
		}
		if code, ok := strings.CutPrefix(strings.TrimSpace(l), "result "); ok {
			if code == "00000" {
				return ""
			}
			return code
		}
	}
}

func (h *processHolder) write(account, token string) {
	h.t.Helper()
	for _, sql := range append([]string{"BEGIN"}, debitSQL(account, token)...) {
		if code := h.exec(sql); code != "" {
			h.t.Fatalf("A: %s: SQLSTATE %s (stderr: %s)", sql, code, h.stderr.String())
		}
	}
}

func (h *processHolder) freeze() {
	if err := pause.Stop(h.cmd.Process.Pid); err != nil {
		h.t.Fatal(err)
	}
}

func (h *processHolder) thaw() {
	if err := pause.Resume(h.cmd.Process.Pid); err != nil {
		h.t.Fatal(err)
	}
}

func (h *processHolder) commit() string { return h.exec("COMMIT") }

// TestGCPauseTimelinePsql: the timeline with A in psql, which prints
// each statement's SQLSTATE after it.
func TestGCPauseTimelinePsql(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatalf("the SQL front is tested with psql, which is not installed (%v): apt-get install postgresql-client", err)
	}
	f := newFront(t)
	a := startHolder(t, func(sql string) string { return sql + ";\n\\echo result :SQLSTATE\n" },
		psql, "-X", "-q", "-v", "ON_ERROR_STOP=0", f.url(billing))
	timeline(t, f, "acct-22", a)
}

// TestGCPauseTimelinePsycopg2: the timeline with A on psycopg2
// (testdata/holder.py), Debian's python3-psycopg2.
func TestGCPauseTimelinePsycopg2(t *testing.T) {
	python := pythonWithPsycopg2(t)
	f := newFront(t)
	a := startHolder(t, func(sql string) string { return sql + "\n" }, python, "testdata/holder.py", f.url(billing))
	timeline(t, f, "acct-23", a)
}

// pythonWithPsycopg2 finds a python3 that imports psycopg2: the one on
// PATH, or Debian's, which python3-psycopg2 installs for.
func pythonWithPsycopg2(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import psycopg2").Run() == nil {
			return path
		}
	}
	t.Fatal("the SQL front is tested with psycopg2, which no python3 here imports: apt-get install python3-psycopg2")
	return ""
}

// TestGCPauseTimelineNodePostgres: the timeline with A on node-postgres
// (testdata/node/holder.mjs), installed into testdata/node by npm if it
// is not there yet.
func TestGCPauseTimelineNodePostgres(t *testing.T) {
	node := nodeWithPg(t)
	f := newFront(t)
	a := startHolder(t, func(sql string) string { return sql + "\n" }, node, "testdata/node/holder.mjs", f.url(billing))
	timeline(t, f, "acct-24", a)
}

// nodeWithPg finds node and makes sure testdata/node has pg.
func nodeWithPg(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the SQL front is tested with node-postgres, and node is not installed (%v): apt-get install nodejs npm", err)
	}
	if _, err := os.Stat(filepath.Join("testdata", "node", "node_modules", "pg")); err == nil {
		return node
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("node-postgres is not in testdata/node, and npm is not installed to put it there (%v): apt-get install npm", err)
	}
	cmd := exec.Command(npm, "install", "--no-package-lock", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = filepath.Join("testdata", "node")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install in testdata/node: %v\n%s", err, out)
	}
	return node
}

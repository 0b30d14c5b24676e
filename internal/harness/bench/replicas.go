package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fencegw/fencegw/internal/devserver/pgcluster"
)

// Bounds on the replicas' lifetimes.
const (
	// replicaStart bounds a replica's start, PostgreSQL and etcd checks
	// included, on a busy machine.
	replicaStart = 2 * time.Minute
	// replicaStop is how long a replica is given to exit on SIGTERM
	// (its --shutdown-timeout, and some) before it is killed.
	replicaStop = 10 * time.Second
)

// replica is one `fencegw serve` child process on a loopback port.
type replica struct {
	addr string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process is reaped
	out  *tail         // its log's end, for errors
}

func (r *replica) pid() int { return r.cmd.Process.Pid }

// startReplicas starts cfg.Replicas gateway processes, each with a pgx
// pool of size connections, and waits until all are ready. On error none
// is left running.
func (e *env) startReplicas(ctx context.Context, size int) (_ []*replica, err error) {
	bin := e.cfg.Binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("bench: the fencegw binary for the replicas: %w", err)
		}
	}
	var rs []*replica
	defer func() {
		if err != nil {
			err = errors.Join(err, stopReplicas(rs))
		}
	}()
	for range e.cfg.Replicas {
		port, err := pgcluster.FreePort()
		if err != nil {
			return nil, fmt.Errorf("bench: a port for a replica: %w", err)
		}
		r := &replica{addr: "127.0.0.1:" + strconv.Itoa(port), done: make(chan struct{}), out: &tail{max: 8 << 10}}
		r.cmd = exec.Command(bin, e.replicaArgs(r.addr)...)
		r.cmd.Env = append(ownEnv(), "FENCEGW_DATABASE_URL="+withPoolSize(e.cfg.DatabaseURL, size))
		r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
		// Should this process die without stopping them, the kernel does.
		r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := r.cmd.Start(); err != nil {
			return nil, fmt.Errorf("bench: start a replica: %w", err)
		}
		go func() { _ = r.cmd.Wait(); close(r.done) }()
		rs = append(rs, r)
	}
	ctx, cancel := context.WithTimeout(ctx, replicaStart)
	defer cancel()
	for i, r := range rs {
		if err := r.awaitReady(ctx); err != nil {
			return nil, fmt.Errorf("bench: replica %d of %d (%s): %w; its log ends:\n%s", i+1, len(rs), r.addr, err, r.out)
		}
	}
	return rs, nil
}

// replicaArgs are serve's flags for a replica listening on addr; the
// database URL goes in the environment, where `ps` does not show it.
func (e *env) replicaArgs(addr string) []string {
	args := []string{"serve", "--listen", addr, "--etcd", strings.Join(e.cfg.EtcdEndpoints, ","),
		"--policy", filepath.Join(e.cfg.Dir, "policy.yaml"), "--log-format", "text", "--log-level", "warn",
		"--shutdown-delay", "0s", "--shutdown-timeout", "5s", "--token-kek-file", e.kekFile}
	if e.cfg.NoGroupCommit {
		args = append(args, "--group-commit=false")
	}
	if e.cfg.WriteTransactions > 0 {
		args = append(args, "--max-write-transactions", strconv.Itoa(e.cfg.WriteTransactions))
	}
	return append(args, e.cfg.ReplicaArgs...)
}

// ownEnv is this process's environment without what would configure a
// replica behind the bench's back: FENCEGW_* (serve reads every flag from
// one), ETCDCTL_* and DATABASE_URL.
func ownEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FENCEGW_") && !strings.HasPrefix(kv, "ETCDCTL_") && !strings.HasPrefix(kv, "DATABASE_URL=") {
			env = append(env, kv)
		}
	}
	return env
}

// awaitReady polls the replica's /readyz until it answers 200, the
// process exits or ctx ends.
func (r *replica) awaitReady(ctx context.Context) error {
	hc := newHTTPClient()
	defer hc.CloseIdleConnections()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addr+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-r.done:
			return fmt.Errorf("exited before it was ready (%v)", r.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stopReplicas stops every replica of rs: SIGTERM, then SIGKILL after
// replicaStop; it returns once all are reaped. Only these processes are
// signalled, each through its own handle.
func stopReplicas(rs []*replica) error {
	for _, r := range rs {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.NewTimer(replicaStop)
	defer deadline.Stop()
	var errs []error
	late := false
	for _, r := range rs {
		if !late {
			select {
			case <-r.done:
				continue
			case <-deadline.C:
				late = true
			}
		}
		select {
		case <-r.done:
			continue
		default:
		}
		_ = r.cmd.Process.Kill()
		<-r.done
		errs = append(errs, fmt.Errorf("bench: replica %s did not stop within %s of SIGTERM: killed; its log ends:\n%s", r.addr, replicaStop, r.out))
	}
	return errors.Join(errs...)
}

// withPoolSize is databaseURL with pgx's pool_max_conns set to size: a
// replica's pool is as large as the in-process gateway's would be.
func withPoolSize(databaseURL string, size int) string {
	u, err := url.Parse(databaseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return databaseURL + " pool_max_conns=" + strconv.Itoa(size) // a key=value string
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(size))
	u.RawQuery = q.Encode()
	return u.String()
}

// tail keeps the last max bytes written to it: a child's log, quoted in
// errors.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

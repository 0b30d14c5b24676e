package torture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fencegw/fencegw/internal/devserver/pgcluster"
)

// gatewayProc is one `fencegw serve` child on a fixed loopback port, so a
// restart keeps its address.
type gatewayProc struct {
	name string // its PostgreSQL sessions' application_name
	args []string
	log  string
	addr string
	// front is its SQL front's address, "" without --wire.
	front string
	// busy: a fault (a crash and restart, a freeze) has it.
	busy atomic.Bool

	mu   sync.Mutex // cmd, done: a restart replaces them
	cmd  *exec.Cmd
	done chan struct{}
}

// newGateway is gateway i, serving dbURL through l (its links) with
// policy; extra are more flags of serve's.
func newGateway(bin, dir string, i int, dbURL string, l *links, members []*etcdMember, policy string, unsafe bool, extra ...string) (*gatewayProc, error) {
	port, err := pgcluster.FreePort()
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("torture-gateway-%d", i)
	if dbURL, err = l.databaseURL(dbURL, name); err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := append([]string{"serve", "--listen", addr, "--database-url", dbURL}, l.etcdFlags(members)...)
	args = append(args, "--policy", policy, "--log-format", "text", "--authority-check", "1s", "--shutdown-delay", "0s", "--shutdown-timeout", "3s")
	if unsafe {
		args = append(args, "--unsafe-no-fence")
	}
	args = append(args, extra...)
	return &gatewayProc{name: name, args: append([]string{bin}, args...), log: filepath.Join(dir, fmt.Sprintf("gateway-%d.log", i)), addr: addr}, nil
}

// pid is the running process's; false if none was started.
func (g *gatewayProc) pid() (int, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd == nil || g.cmd.Process == nil {
		return 0, false
	}
	return g.cmd.Process.Pid, true
}

// ownEtcdEnv is this process's environment without what would point a
// child's etcd client elsewhere, or give it TLS files and a user that the
// torture's own cluster does not want (FENCEGW_ETCD*, ETCDCTL_*, an
// operator's): the children talk to that cluster only, as etcdFlags say.
func ownEtcdEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FENCEGW_ETCD") && !strings.HasPrefix(kv, "ETCDCTL_") {
			env = append(env, kv)
		}
	}
	return env
}

func (g *gatewayProc) url() string { return "http://" + g.addr }

// start launches the process and waits until /readyz answers 200.
func (g *gatewayProc) start(ctx context.Context) error {
	out, err := os.OpenFile(g.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(g.args[0], g.args[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = ownEtcdEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("torture: start gateway: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); out.Close(); close(done) }()
	g.mu.Lock()
	g.cmd, g.done = cmd, done
	g.mu.Unlock()
	if err := waitReady(ctx, g.url()+"/readyz", done); err != nil {
		return fmt.Errorf("%w: %s", err, lastLine(g.log))
	}
	return nil
}

// restart starts the gateway again, as a supervisor (systemd's
// Restart=on-failure, a container's restart policy) would: one that
// exits before it is ready, because a fault still cut it off from etcd or
// PostgreSQL when it started, is started again until it is ready or ctx
// ends. A run that left a gateway down for good would lose the faults
// that need it. Each failed start is logged with its reason.
func (g *gatewayProc) restart(ctx context.Context, log *slog.Logger) {
	for try := 1; ctx.Err() == nil; try++ {
		err := g.start(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		log.Warn("a restarted gateway exited before it was ready; starting it again", "gateway", g.name, "try", try, "error", err)
		sleep(ctx, 500*time.Millisecond)
	}
}

// lastLine is the last non-empty line of the file at path: the reason a
// gateway gave for exiting.
func lastLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "its log: " + err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

func waitReady(ctx context.Context, url string, exited <-chan struct{}) error {
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("torture: gateway exited before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("torture: gateway not ready: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// process is the running process and its end; nil if none was started.
func (g *gatewayProc) process() (*os.Process, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd == nil || g.cmd.Process == nil {
		return nil, nil
	}
	return g.cmd.Process, g.done
}

// kill is the crash the nemesis injects: SIGKILL, no shutdown.
func (g *gatewayProc) kill() {
	if p, done := g.process(); p != nil {
		_ = p.Kill()
		<-done
	}
}

// stop shuts the gateway down as an operator would.
func (g *gatewayProc) stop() {
	p, done := g.process()
	if p == nil {
		return
	}
	_ = p.Signal(syscall.SIGCONT) // a frozen gateway cannot stop
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		g.kill()
	}
}

// postgres is the run's PostgreSQL, restartable on the same port and data.
type postgres struct {
	opts pgcluster.Options
	pg   *pgcluster.Cluster
}

func startPostgres(ctx context.Context, dir string) (*postgres, error) {
	port, err := pgcluster.FreePort()
	if err != nil {
		return nil, err
	}
	p := &postgres{opts: pgcluster.Options{Dir: dir, Port: port}}
	if p.pg, err = pgcluster.Start(ctx, p.opts); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *postgres) url() string { return p.pg.URL() }

// restart stops PostgreSQL (fast shutdown: acknowledged commits are on
// disk) and starts it again on the same data.
func (p *postgres) restart(ctx context.Context) error {
	// A stop that had to SIGKILL still leaves the data to start again on.
	if err := p.pg.Stop(); err != nil && !errors.Is(err, pgcluster.ErrKilled) {
		return err
	}
	var err error
	p.pg, err = pgcluster.Start(ctx, p.opts)
	return err
}

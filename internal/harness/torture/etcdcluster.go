package torture

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/fencegw/fencegw/internal/devserver/pgcluster"
)

// MemberMain runs one member of the torture's etcd cluster as a process of
// its own (`fencegw torture-etcd`), so the nemesis can kill and freeze it.
func MemberMain(args []string) int {
	fs := flag.NewFlagSet("torture-etcd", flag.ContinueOnError)
	name := fs.String("name", "", "member name")
	dir := fs.String("dir", "", "data folder")
	clientURL := fs.String("client", "", "client URL")
	peerURL := fs.String("peer", "", "peer URL")
	cluster := fs.String("cluster", "", "initial cluster: name=peerURL,...")
	cert := fs.String("cert", "", "with --key and --ca: serve clients TLS only, and only those with a certificate --ca signed")
	key := fs.String("key", "", "the key of --cert")
	ca := fs.String("ca", "", "the CA of client certificates")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cu, err1 := url.Parse(*clientURL)
	pu, err2 := url.Parse(*peerURL)
	if err := errors.Join(err1, err2); err != nil || *name == "" || *dir == "" || *cluster == "" {
		fmt.Fprintln(os.Stderr, "torture-etcd: needs --name, --dir, --client, --peer and --cluster")
		return 2
	}
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = *name, *dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster, cfg.InitialClusterToken = *cluster, "fencegw-torture"
	// Faster than the defaults so that a killed leader is replaced within
	// about a second, and a 1 s lease TTL is allowed.
	cfg.TickMs, cfg.ElectionMs = 50, 500
	cfg.LogLevel = "error"
	if *cert != "" {
		cfg.ClientTLSInfo = transport.TLSInfo{CertFile: *cert, KeyFile: *key, TrustedCAFile: *ca, ClientCertAuth: true}
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture-etcd:", err)
		return 1
	}
	defer e.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	select {
	case <-ctx.Done():
		return 0
	case err := <-e.Err():
		fmt.Fprintln(os.Stderr, "torture-etcd:", err)
		return 1
	}
}

// etcdMember is one member process; restarts reuse its data and URLs.
type etcdMember struct {
	name, clientURL string
	dir, peerURL    string // for a restore from a snapshot
	cluster         string // the initial cluster, name=peerURL,...
	args            []string
	log             string
	tls             *etcdTLS // nil: plaintext
	cmd             *exec.Cmd
	done            chan struct{}
}

// startCluster starts three members, serving tls unless it is nil, and
// waits until they have a leader.
func startCluster(ctx context.Context, bin, dir string, tls *etcdTLS) ([]*etcdMember, error) {
	var members []*etcdMember
	var peers []string
	for i := range 3 {
		cp, err1 := pgcluster.FreePort()
		pp, err2 := pgcluster.FreePort()
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		name := fmt.Sprintf("etcd%d", i)
		m := &etcdMember{name: name, clientURL: fmt.Sprintf("%s://127.0.0.1:%d", tls.scheme(), cp), log: filepath.Join(dir, name+".log"),
			dir: filepath.Join(dir, name), peerURL: fmt.Sprintf("http://127.0.0.1:%d", pp), tls: tls}
		m.args = append([]string{bin, "torture-etcd", "--name", name, "--dir", m.dir, "--client", m.clientURL, "--peer", m.peerURL}, tls.memberArgs()...)
		peers = append(peers, fmt.Sprintf("%s=http://127.0.0.1:%d", name, pp))
		members = append(members, m)
	}
	for _, m := range members {
		m.cluster = strings.Join(peers, ",")
		m.args = append(m.args, "--cluster", m.cluster)
		if err := m.start(); err != nil {
			stopCluster(members)
			return nil, err
		}
	}
	if _, err := leader(ctx, members, 30*time.Second); err != nil {
		stopCluster(members)
		return nil, err
	}
	return members, nil
}

func endpoints(members []*etcdMember) []string {
	var eps []string
	for _, m := range members {
		eps = append(eps, m.clientURL)
	}
	return eps
}

func (m *etcdMember) start() error {
	out, err := os.OpenFile(m.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	m.cmd = exec.Command(m.args[0], m.args[1:]...)
	m.cmd.Stdout, m.cmd.Stderr = out, out
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("torture: start %s: %w", m.name, err)
	}
	m.done = make(chan struct{})
	go func() { m.cmd.Wait(); out.Close(); close(m.done) }()
	return nil
}

func (m *etcdMember) kill() {
	if m.cmd != nil && m.cmd.Process != nil {
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}

func stopCluster(members []*etcdMember) {
	for _, m := range members {
		if m.cmd != nil && m.cmd.Process != nil {
			_ = m.cmd.Process.Signal(syscall.SIGCONT) // a frozen member cannot stop
			_ = m.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-m.done:
			case <-time.After(5 * time.Second):
				m.kill()
			}
		}
	}
}

// leader returns the index of the current leader, waiting up to d for one.
func leader(ctx context.Context, members []*etcdMember, d time.Duration) (int, error) {
	cfg := clientConfig(members, endpoints(members)...)
	cfg.DialTimeout = time.Second
	cli, err := clientv3.New(cfg)
	if err != nil {
		return -1, err
	}
	defer cli.Close()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for i, m := range members {
			sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			st, err := cli.Status(sctx, m.clientURL)
			cancel()
			if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
				return i, nil
			}
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return -1, errors.New("torture: the etcd cluster elected no leader")
}

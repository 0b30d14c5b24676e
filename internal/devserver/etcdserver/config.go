package etcdserver

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Options configures StartWith. The zero value is Start's server.
type Options struct {
	// Dir holds the data; "" is a temporary directory removed by Close.
	Dir string
	// Log receives etcd's errors and warnings; nil writes them to stderr
	// in etcd's own shape.
	Log *slog.Logger
	// TLS, if set, serves clients over TLS only (https:// endpoints).
	TLS *TLS
}

// TLS is how the server meets its clients: its certificate and, with
// ClientCertAuth, the CA their certificates must be signed by.
type TLS struct {
	CertFile, KeyFile string
	// CAFile verifies client certificates.
	CAFile string
	// ClientCertAuth refuses a client without a certificate CAFile verifies.
	ClientCertAuth bool
}

// newConfig describes a fresh single-member cluster on 127.0.0.1. Every
// Start gets its own name and ports so several servers can share a process.
func newConfig(name, dataDir string, lg *zap.Logger, tls *TLS) (*embed.Config, error) {
	clientURL, err := freeURL()
	if err != nil {
		return nil, fmt.Errorf("new config: client url: %w", err)
	}
	if tls != nil {
		clientURL.Scheme = "https"
	}
	peerURL, err := freeURL()
	if err != nil {
		return nil, fmt.Errorf("new config: peer url: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = dataDir
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(name)
	// The token seeds member and cluster IDs; the unique name keeps them
	// distinct between servers in one process.
	cfg.InitialClusterToken = name
	// A lone member has no peers to heartbeat, so short ticks cost nothing
	// and cut the first election from ~1s to tens of ms. They also lower
	// etcd's minimum lease TTL (1.5 election timeouts, rounded up to whole
	// seconds) from 2s to 1s.
	cfg.TickMs, cfg.ElectionMs = 10, 100
	// Every lease and lock key leaves revisions behind: without
	// compaction the store only grows (3,000 short leases took it from
	// 49 KB to 26 MB). Keep five minutes of history: waiters that watch
	// from an older revision read their predecessors again.
	cfg.AutoCompactionMode, cfg.AutoCompactionRetention = "periodic", "5m"
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	if tls != nil {
		cfg.ClientTLSInfo = transport.TLSInfo{
			CertFile: tls.CertFile, KeyFile: tls.KeyFile,
			TrustedCAFile: tls.CAFile, ClientCertAuth: tls.ClientCertAuth,
		}
	}
	return cfg, nil
}

// freeURL picks an unused 127.0.0.1 port. It is released before etcd binds
// it, so Start retries when another process takes it in between.
func freeURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, fmt.Errorf("pick free port: %w", err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	return url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}, nil
}

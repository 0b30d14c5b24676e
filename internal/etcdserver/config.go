package etcdserver

import (
	"fmt"
	"net"
	"net/url"
	"strconv"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// newConfig describes a fresh single-member cluster on 127.0.0.1. Every
// Start gets its own name and ports so several servers can share a process.
func newConfig(name, dataDir string, lg *zap.Logger) (*embed.Config, error) {
	clientURL, err := freeURL()
	if err != nil {
		return nil, fmt.Errorf("new config: client url: %w", err)
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

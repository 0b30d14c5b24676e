package torture

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/fencegw/fencegw/internal/devserver/pgcluster"
	"github.com/fencegw/fencegw/internal/harness/cgroupcpu"
	"github.com/fencegw/fencegw/kek"
)

// startGateways starts cfg.Gateways gateways, each reaching dbURL's
// servers and the etcd members through links of its own. It returns
// what it started, for the caller to stop, also on an error.
func startGateways(ctx context.Context, cfg Config, bin, dir, dbURL string, etcd []*etcdMember, policy string) ([]*gatewayProc, []*links, error) {
	addrs, err := pgAddrs(dbURL)
	if err != nil {
		return nil, nil, err
	}
	// The run's etcd is its own, new: a KEK of the run's own seals its
	// signing keys, shared by every gateway.
	kekFile := filepath.Join(dir, "token.kek")
	if err := os.WriteFile(kekFile, kek.New(), 0o600); err != nil {
		return nil, nil, err
	}
	extra := []string{"--token-kek-file", kekFile}
	if cfg.WriteTransactions > 0 {
		extra = append(extra, "--max-write-transactions", strconv.Itoa(cfg.WriteTransactions))
	}
	if cfg.UnsafeIgnoreCommitWarnings {
		extra = append(extra, "--unsafe-ignore-commit-warnings")
	}
	var gateways []*gatewayProc
	var all []*links
	for i := range cfg.Gateways {
		l, err := newLinks(addrs, etcd)
		if err != nil {
			return gateways, all, err
		}
		all = append(all, l)
		args, front := extra, ""
		if cfg.ClockFaults {
			args = append(slices.Clip(args), "--unsafe-torture-clock", clockPath(dir, "gateway-clock", i))
		}
		if cfg.Wire > 0 {
			port, err := pgcluster.FreePort()
			if err != nil {
				return gateways, all, err
			}
			front = fmt.Sprintf("127.0.0.1:%d", port)
			args = append(slices.Clip(args), "--pg-listen", front)
		}
		g, err := newGateway(bin, dir, i, dbURL, l, etcd, policy, cfg.UnsafeNoFence, args...)
		if err != nil {
			return gateways, all, err
		}
		g.front = front
		if err := g.start(ctx); err != nil {
			return gateways, all, fmt.Errorf("%w (log: %s)", err, g.log)
		}
		gateways = append(gateways, g)
	}
	return gateways, all, nil
}

// throttleQuota and throttlePeriod are a throttled worker's CPU limit: at
// most 1 ms of CPU a second, and the period as long as the kernel allows,
// so that a worker at its limit stalls for most of a second — a TTL in
// the CI profile.
const (
	throttleQuota  = time.Millisecond
	throttlePeriod = time.Second
)

// throttleGroup makes the run's CPU-limited cgroup; nil and why not
// where the machine does not allow it.
func throttleGroup() (*cgroupcpu.Group, string) {
	g, err := cgroupcpu.New(fmt.Sprintf("fencegw-torture-%d", os.Getpid()), throttleQuota, throttlePeriod)
	if err != nil {
		return nil, err.Error()
	}
	return g, ""
}

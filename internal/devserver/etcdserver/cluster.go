package etcdserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Cluster is a cluster of embedded etcd members in this process, for tests
// of what a single member cannot show: leader elections, which renew
// every lease to its full TTL.
type Cluster struct {
	members []*embed.Etcd
	dir     string
}

// StartCluster runs an n-member etcd cluster on 127.0.0.1, its data in a
// temporary directory that Close removes, and returns once every member
// serves requests. ctx bounds startup only.
func StartCluster(ctx context.Context, n int) (_ *Cluster, err error) {
	dir, err := os.MkdirTemp("", "fencegw-etcd-cluster-")
	if err != nil {
		return nil, fmt.Errorf("etcdserver cluster: %w", err)
	}
	c := &Cluster{dir: dir}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	cfgs := make([]*embed.Config, n)
	var initial []string
	for i := range cfgs {
		name := fmt.Sprintf("fencegw-%d-%d", os.Getpid(), seq.Add(1))
		cfg, err := newConfig(name, fmt.Sprintf("%s/%d", dir, i), zap.NewNop(), nil)
		if err != nil {
			return nil, fmt.Errorf("etcdserver cluster: %w", err)
		}
		// Peers heartbeat each other: ticks short enough for elections
		// within a test, long enough not to hold a CPU.
		cfg.TickMs, cfg.ElectionMs = 50, 500
		cfgs[i] = cfg
		initial = append(initial, name+"="+cfg.AdvertisePeerUrls[0].String())
	}
	for _, cfg := range cfgs {
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "fencegw-cluster-" + cfgs[0].Name
	}
	// Each member waits for the others to start before it is ready, so
	// they start together and are awaited after.
	for _, cfg := range cfgs {
		m, err := embed.StartEtcd(cfg)
		if err != nil {
			return nil, fmt.Errorf("etcdserver cluster: %w", err)
		}
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		select {
		case <-m.Server.ReadyNotify():
		case err := <-m.Err():
			return nil, fmt.Errorf("etcdserver cluster: %w", errors.Join(ErrStopped, err))
		case <-ctx.Done():
			return nil, fmt.Errorf("etcdserver cluster: waiting for ready: %w", ctx.Err())
		}
	}
	return c, nil
}

// Endpoints returns every member's client URL.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.members {
		for _, u := range m.Config().AdvertiseClientUrls {
			eps = append(eps, u.String())
		}
	}
	return eps
}

// Leader returns the index of the member that leads now, -1 if none does.
func (c *Cluster) Leader() int {
	for i, m := range c.members {
		if m.Server.Leader() == m.Server.MemberID() {
			return i
		}
	}
	return -1
}

// MoveLeader hands leadership from the leader to another member: an
// election, as a leader's loss would bring, without losing a member.
func (c *Cluster) MoveLeader(ctx context.Context) error {
	from := c.Leader()
	if from < 0 {
		return errors.New("etcdserver cluster: no leader to move")
	}
	to := c.members[(from+1)%len(c.members)].Server.MemberID()
	if err := c.members[from].Server.MoveLeader(ctx, uint64(c.members[from].Server.MemberID()), uint64(to)); err != nil {
		return fmt.Errorf("etcdserver cluster: move leader: %w", err)
	}
	return nil
}

// Close stops every member and removes the data.
func (c *Cluster) Close() error {
	for _, m := range c.members {
		m.Close()
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("etcdserver cluster close: %w", err)
	}
	return nil
}

package torture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// revisionBump is what a restore with --bump-revision adds to the
// snapshot's revision: far past anything issued since the snapshot, as
// etcd's documentation advises.
const revisionBump = 1_000_000_000

// rollbacks takes a snapshot of etcd, and half a RollbackEvery later
// restores every member from it, as an operator would after losing the
// cluster: the cluster then issues again revisions it issued since the
// snapshot. Without RollbackBump the gateways must halt; the nemesis
// measures how long that took and runs what
// docs/operations/failover-and-epochs.md tells an operator, `fencegw
// epoch bump`. With RollbackBump the restore bumps the revision
// and marks it compacted, and no gateway should halt.
func (n *nemesis) rollbacks(ctx context.Context) {
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(n.cfg.RollbackEvery / 2):
		}
		path := filepath.Join(n.dir, fmt.Sprintf("etcd-snapshot-%d.db", i))
		n.holdEtcd()
		err := saveSnapshot(context.WithoutCancel(ctx), n.etcd, path)
		n.etcdBusy.Store(false)
		if err != nil {
			n.log.Error("etcd snapshot failed", "error", err)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(n.cfg.RollbackEvery / 2):
		}
		n.rollback(context.WithoutCancel(ctx), path)
	}
}

// holdEtcd waits until no other etcd fault is under way, and keeps others
// off until etcdBusy is cleared.
func (n *nemesis) holdEtcd() {
	for !n.etcdBusy.CompareAndSwap(false, true) {
		time.Sleep(50 * time.Millisecond)
	}
}

func (n *nemesis) rollback(ctx context.Context, path string) {
	n.holdEtcd()
	defer n.etcdBusy.Store(false)
	start := time.Now()
	if err := restoreCluster(ctx, n.etcd, path, n.cfg.RollbackBump); err != nil {
		n.log.Error("etcd restore failed", "error", err)
		return
	}
	n.count("etcd-rollback")
	restored := time.Now()
	if n.cfg.RollbackBump {
		// Restored past every revision ever issued: nothing to halt for.
		// Watch for a few authority checks that no gateway does.
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if n.anyHalted() {
				n.count("halted")
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		n.log.Info("torture: etcd restored with a revision bump", "took", restored.Sub(start).Round(time.Millisecond).String())
		return
	}
	halted := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if n.anyHalted() {
			halted = true
			break
		}
	}
	if !halted {
		n.log.Error("etcd went back in time and no gateway halted within 30s")
		return
	}
	n.count("halted")
	n.mu.Lock()
	n.haltAfter = append(n.haltAfter, time.Since(restored))
	n.mu.Unlock()
	n.log.Info("torture: gateways halted after the etcd restore", "after", time.Since(restored).Round(time.Millisecond).String())
	// What docs/operations/failover-and-epochs.md tells an operator to do.
	cmd := exec.CommandContext(ctx, n.bin, append([]string{"epoch", "bump", "--database-url", n.dbURL}, etcdFlags(n.etcd)...)...)
	cmd.Env = ownEtcdEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		n.log.Error("fencegw epoch bump failed", "error", err, "output", string(out))
		return
	}
	n.count("epoch-bump")
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if !n.anyHalted() {
			n.log.Info("torture: gateways resumed after epoch bump")
			return
		}
	}
	n.log.Error("gateways still halted 30s after epoch bump")
}

// anyHalted reports whether a gateway's /readyz says its token authority
// halted. A gateway being restarted by the nemesis does not answer: it
// counts as not halted.
func (n *nemesis) anyHalted() bool {
	for _, g := range n.gateways {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.url()+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var body struct {
				Checks map[string]string `json:"checks"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if a := body.Checks["authority"]; a != "" && a != "ok" {
				cancel()
				return true
			}
		}
		cancel()
	}
	return false
}

// saveSnapshot saves a snapshot of the cluster's current leader to path.
func saveSnapshot(ctx context.Context, members []*etcdMember, path string) error {
	i, err := leader(ctx, members, 10*time.Second)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = snapshot.NewV3(zap.NewNop()).Save(ctx, clientConfig(members, members[i].clientURL), path)
	return err
}

// restoreCluster stops every member, replaces each one's data with the
// snapshot at path (etcdutl snapshot restore, with --bump-revision and
// --mark-compacted if bump), starts them again and waits for a leader.
func restoreCluster(ctx context.Context, members []*etcdMember, path string, bump bool) error {
	for _, m := range members {
		if m.cmd != nil && m.cmd.Process != nil {
			_ = m.cmd.Process.Signal(syscall.SIGCONT)
			_ = m.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-m.done:
			case <-time.After(5 * time.Second):
				m.kill()
			}
		}
	}
	var errs []error
	for _, m := range members {
		if err := os.RemoveAll(m.dir); err != nil {
			return err
		}
		cfg := snapshot.RestoreConfig{
			SnapshotPath: path, Name: m.name, OutputDataDir: m.dir,
			PeerURLs: []string{m.peerURL}, InitialCluster: m.cluster, InitialClusterToken: "fencegw-torture",
		}
		if bump {
			cfg.RevisionBump, cfg.MarkCompacted = revisionBump, true
		}
		if err := snapshot.NewV3(zap.NewNop()).Restore(cfg); err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", m.name, err))
		}
	}
	for _, m := range members {
		if err := m.start(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	_, err := leader(ctx, members, 30*time.Second)
	return err
}

// haltTimes summarises how long gateways took to halt after each restore,
// for the report's faults: p50 and max in milliseconds.
func haltTimes(d []time.Duration) (p50, maxMs int) {
	if len(d) == 0 {
		return 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return int(s[len(s)/2].Milliseconds()), int(s[len(s)-1].Milliseconds())
}

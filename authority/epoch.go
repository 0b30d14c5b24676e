package authority

import (
	"context"
	"fmt"
	"github.com/fencegw/fencegw/tokens"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/fencegw/fencegw/internal/clip"
)

// View reads the epoch key with a linearizable read; the response header
// carries the cluster ID and current revision.
func (a *Etcd) View(ctx context.Context) (tokens.View, error) {
	resp, err := a.cli.Get(ctx, epochKey)
	if err != nil {
		return tokens.View{}, unavailable("read epoch", err)
	}
	epoch, err := epochOf(resp.Kvs)
	if err != nil {
		return tokens.View{}, err
	}
	return tokens.View{Epoch: epoch, ClusterID: strconv.FormatUint(resp.Header.ClusterId, 16), Revision: resp.Header.Revision}, nil
}

// epochOf reads the result of a Get of the epoch key: DefaultEpoch while
// the key does not exist.
func epochOf(kvs []*mvccpb.KeyValue) (int64, error) {
	if len(kvs) == 0 {
		return tokens.DefaultEpoch, nil
	}
	n, err := strconv.ParseInt(string(kvs[0].Value), 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("authority: etcd key %s holds %q, not an epoch", epochKey, clip.String(string(kvs[0].Value), 48))
	}
	return n, nil
}

// SetEpoch writes the epoch key. Only `fencegw epoch bump` calls it, after
// PostgreSQL has recorded the new epoch.
func (a *Etcd) SetEpoch(ctx context.Context, epoch int64) error {
	if _, err := a.cli.Put(ctx, epochKey, strconv.FormatInt(epoch, 10)); err != nil {
		return unavailable("write epoch", err)
	}
	return nil
}

// Resume makes epoch current and lifts a halt. A new epoch starts its
// revision watermark afresh at rev: a restored etcd counts from lower.
func (a *Etcd) Resume(epoch, rev int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if epoch != a.epoch.Load() {
		a.newestRevision.Store(rev)
		a.epoch.Store(epoch)
	}
	a.observe(rev)
	a.haltReason = nil
}

// Halt stops the authority: tokens are refused and no lease is granted or
// renewed until Resume.
func (a *Etcd) Halt(err *tokens.HaltedError) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.haltReason = err
}

// Halted returns the reason the authority is halted, or nil.
func (a *Etcd) Halted() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.haltReason == nil {
		return nil
	}
	return a.haltReason
}

package tokens

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/fencegw/fencegw/internal/clip"
)

// ErrHalted is wrapped by *HaltedError: the authority looks rolled back or
// replaced, so no token from it can be trusted until an operator bumps the
// epoch.
var ErrHalted = errors.New("tokens: authority halted")

// HaltedError says why the authority stopped issuing and accepting tokens.
type HaltedError struct{ Reason string }

func (e *HaltedError) Error() string {
	return "tokens: authority halted: " + e.Reason + "; run `fencegw epoch bump` once etcd is the cluster you want"
}

func (e *HaltedError) Unwrap() error { return ErrHalted }

// View is what etcd says about itself at one moment.
type View struct {
	Epoch     int64
	ClusterID string // hex
	Revision  int64
}

// Record is what the resource side (PostgreSQL) remembers of the authority:
// the current epoch, the etcd cluster that issues it and the highest
// revision seen in it.
type Record struct {
	Epoch       int64
	ClusterID   string // "" until first seen
	MaxRevision int64
}

// View reads the epoch key with a linearizable read; the response header
// carries the cluster ID and current revision.
func (a *Etcd) View(ctx context.Context) (View, error) {
	resp, err := a.cli.Get(ctx, epochKey)
	if err != nil {
		return View{}, unavailable("read epoch", err)
	}
	epoch, err := epochOf(resp.Kvs)
	if err != nil {
		return View{}, err
	}
	return View{Epoch: epoch, ClusterID: strconv.FormatUint(resp.Header.ClusterId, 16), Revision: resp.Header.Revision}, nil
}

// epochOf reads the result of a Get of the epoch key: DefaultEpoch while
// the key does not exist.
func epochOf(kvs []*mvccpb.KeyValue) (int64, error) {
	if len(kvs) == 0 {
		return DefaultEpoch, nil
	}
	n, err := strconv.ParseInt(string(kvs[0].Value), 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("tokens: etcd key %s holds %q, not an epoch", epochKey, clip.String(string(kvs[0].Value), 48))
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

// Reconcile compares etcd's view with the record and returns the record to
// persist, or a *HaltedError when etcd went backwards: a lower epoch, a
// different cluster, or a revision below one already seen in this epoch
// (a snapshot restored without --bump-revision would reissue old numbers).
// seen is the newest revision this process observed in the record's epoch.
func Reconcile(v View, rec Record, seen int64) (Record, error) {
	switch {
	case v.Epoch < rec.Epoch:
		return rec, &HaltedError{Reason: fmt.Sprintf("etcd's epoch %d is behind PostgreSQL's %d: etcd was restored from an older snapshot", v.Epoch, rec.Epoch)}
	case v.Epoch > rec.Epoch:
		return rec, &HaltedError{Reason: fmt.Sprintf("etcd's epoch %d is ahead of PostgreSQL's %d: the epoch was changed in etcd alone", v.Epoch, rec.Epoch)}
	case rec.ClusterID != "" && rec.ClusterID != v.ClusterID:
		return rec, &HaltedError{Reason: fmt.Sprintf("etcd's cluster ID changed from %s to %s: a different or restored cluster", rec.ClusterID, v.ClusterID)}
	case v.Revision < max(rec.MaxRevision, seen):
		return rec, &HaltedError{Reason: fmt.Sprintf("etcd's revision %d is below %d, already seen in epoch %d: etcd went back in time", v.Revision, max(rec.MaxRevision, seen), rec.Epoch)}
	}
	return Record{Epoch: v.Epoch, ClusterID: v.ClusterID, MaxRevision: v.Revision}, nil
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
func (a *Etcd) Halt(err *HaltedError) {
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

package tokens

import (
	"cmp"
	"fmt"

	"github.com/fencegw/fencegw/outcome"
)

// DefaultEpoch is the epoch of a cluster whose operator never bumped it.
const DefaultEpoch = 1

// ErrHalted is wrapped by *HaltedError: the authority looks rolled back or
// replaced, so no token from it can be trusted until an operator bumps the
// epoch.
var ErrHalted = outcome.New("tokens: authority halted", outcome.NotApplied)

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
	// Identity is the random name fencegw gave the cluster's data the
	// first time it used it; "" if it has none yet. Unlike the cluster
	// ID, which etcd derives from its flags, it does not survive a wiped
	// data directory.
	Identity string
	Revision int64
}

// Record is what the resource side (PostgreSQL) remembers of the authority:
// the current epoch, the etcd cluster that issues it, its identity and the
// highest revision seen in it.
type Record struct {
	Epoch       int64
	ClusterID   string // "" until first seen
	Identity    string // "" until first seen
	MaxRevision int64
}

// Reconcile compares etcd's view with the record and returns the record to
// persist, or a *HaltedError when etcd went backwards: a lower epoch, a
// different cluster or identity (a wiped or another cluster, even one whose
// revision is already past the recorded one), or a revision below one
// already seen in this epoch (a snapshot restored without --bump-revision
// would reissue old numbers).
// seen is the newest revision this process observed in the record's epoch.
func Reconcile(v View, rec Record, seen int64) (Record, error) {
	switch {
	case v.Epoch < rec.Epoch:
		return rec, &HaltedError{Reason: fmt.Sprintf("etcd's epoch %d is behind PostgreSQL's %d: etcd was restored from an older snapshot", v.Epoch, rec.Epoch)}
	case v.Epoch > rec.Epoch:
		return rec, &HaltedError{Reason: fmt.Sprintf("etcd's epoch %d is ahead of PostgreSQL's %d: the epoch was changed in etcd alone", v.Epoch, rec.Epoch)}
	case rec.ClusterID != "" && rec.ClusterID != v.ClusterID:
		return rec, &HaltedError{Reason: fmt.Sprintf("etcd's cluster ID changed from %s to %s: a different or restored cluster", rec.ClusterID, v.ClusterID)}
	case rec.Identity != "" && rec.Identity != v.Identity:
		return rec, &HaltedError{Reason: fmt.Sprintf("etcd's identity changed from %s to %s: its data was wiped, its /fencegw/identity key deleted, or it is another cluster", rec.Identity, cmp.Or(v.Identity, "none"))}
	case v.Revision < max(rec.MaxRevision, seen):
		return rec, &HaltedError{Reason: fmt.Sprintf("etcd's revision %d is below %d, already seen in epoch %d: etcd went back in time", v.Revision, max(rec.MaxRevision, seen), rec.Epoch)}
	}
	return Record{Epoch: v.Epoch, ClusterID: v.ClusterID, Identity: v.Identity, MaxRevision: v.Revision}, nil
}

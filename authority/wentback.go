package authority

import (
	"context"
	"fmt"

	"github.com/fencegw/fencegw/tokens"
)

// A validation that reads etcd judges a token against what etcd says now.
// If etcd was restored from an older snapshot since this process last
// heard from it, what it says now is a past that other replicas have
// already left: a token they applied may look never issued (its revision
// above etcd's) or unheld (its lock key not in the snapshot). Refusing it
// would contradict them, and a refusal is final for its client. Every such
// read is a linearizable one begun after this process saw the revisions it
// remembers, so it answers at or above the newest of them unless etcd
// went back in time: then the authority halts at once, as the watchdog
// would at its next check, and the request is answered unavailable.

// seenBefore is what this process had seen of etcd before a read: the
// epoch and the newest revision of it.
type seenBefore struct{ epoch, revision int64 }

// seen returns what this process has seen so far; take it before the
// read it is to judge. The epoch is loaded first: Resume stores a new
// epoch's revision before the epoch, so a revision of a newer epoch is
// never judged as this one's (checkEpochRead compares epochs again).
func (a *Etcd) seen() seenBefore {
	epoch := a.epoch.Load()
	return seenBefore{epoch: epoch, revision: a.newestRevision.Load()}
}

// checkEpochRead halts the authority if a linearizable read begun after
// s found etcd at epoch and revision rev behind s: an epoch below s's (a
// restore from before a bump), or s's epoch at a revision below s's (a
// restore). An epoch above s's is a bump this process has not caught up
// with, whose revisions start afresh: the watchdog judges it against the
// resource side's record, and a token of it has the gateway ask the
// watchdog at once. It returns the halt, or nil.
func (a *Etcd) checkEpochRead(s seenBefore, epoch, rev int64) error {
	switch {
	case epoch > s.epoch || a.epoch.Load() != s.epoch:
		return nil
	case epoch < s.epoch:
		return a.haltWentBack(fmt.Sprintf("etcd's epoch %d is below %d, this process's: etcd was restored from before a bump", epoch, s.epoch))
	case rev < s.revision:
		return a.haltWentBack(fmt.Sprintf("etcd answered at revision %d, below %d, already seen in epoch %d: etcd went back in time", rev, s.revision, s.epoch))
	}
	return nil
}

// checkBehind is checkEpochRead for a read that did not say etcd's
// epoch: only one below s's revision needs it, and reads it.
func (a *Etcd) checkBehind(ctx context.Context, s seenBefore, rev int64) error {
	if rev >= s.revision {
		return nil
	}
	resp, err := a.cli.Get(ctx, epochKey)
	if err != nil {
		return unavailable("read epoch", err)
	}
	epoch, err := epochOf(resp.Kvs)
	if err != nil {
		return unavailable("read epoch", err)
	}
	return a.checkEpochRead(s, epoch, rev)
}

// haltWentBack halts the authority for etcd going back, and returns the
// halt.
func (a *Etcd) haltWentBack(reason string) error {
	halt := &tokens.HaltedError{Reason: reason}
	a.Halt(halt)
	return halt
}

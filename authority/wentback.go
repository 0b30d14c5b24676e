package authority

import (
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
// never judged as this one's (checkRead compares epochs again).
func (a *Etcd) seen() seenBefore {
	epoch := a.epoch.Load()
	return seenBefore{epoch: epoch, revision: a.newestRevision.Load()}
}

// checkRead halts the authority if rev, the revision a linearizable read
// begun after s answered at, is below s's revision in the same epoch:
// etcd went back in time. It returns the halt, or nil.
func (a *Etcd) checkRead(s seenBefore, rev int64) error {
	if rev >= s.revision || a.epoch.Load() != s.epoch {
		return nil
	}
	return a.haltWentBack(fmt.Sprintf("etcd answered at revision %d, below %d, already seen in epoch %d: etcd went back in time", rev, s.revision, s.epoch))
}

// checkEpochRead is checkRead for a read that also says etcd's epoch:
// one above s's is a bump this process has not caught up with, whose
// revisions start afresh (the watchdog judges it against the resource
// side's record, and a token of it has the gateway ask the watchdog at
// once); one below is a restore from before a bump.
func (a *Etcd) checkEpochRead(s seenBefore, epoch, rev int64) error {
	switch {
	case epoch > s.epoch || a.epoch.Load() != s.epoch:
		return nil
	case epoch < s.epoch:
		return a.haltWentBack(fmt.Sprintf("etcd's epoch %d is below %d, this process's: etcd was restored from before a bump", epoch, s.epoch))
	}
	return a.checkRead(s, rev)
}

// haltWentBack halts the authority for etcd going back, and returns the
// halt.
func (a *Etcd) haltWentBack(reason string) error {
	halt := &tokens.HaltedError{Reason: reason}
	a.Halt(halt)
	return halt
}

package authority

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// How a lease ended, as LeaseEnd reports it: the Endings watchers are
// told, as strings.
const (
	EndReleased = string(EndingReleased)
	EndExpired  = string(EndingExpired)
	EndRevoked  = string(EndingRevoked)
)

// ending is the value of an endingKey (holderrecord.go): how a lease is
// about to end, and for a revoke who and why. A release or a revoke
// writes it just before revoking, attached to the lease, so the deletion
// of the lease's keys carries why. A lease whose keys go without one ran
// out: it expired. A release whose revoke then fails, and whose lease runs
// out instead, is still recorded as released: its holder said it was done
// (as with the lock-delay, lockdelay.go).
type ending struct {
	How    string `json:"how"`
	Actor  string `json:"actor,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// markEnding records how lease id is about to end; ErrLeaseNotFound if
// the lease is gone already.
func (a *Etcd) markEnding(ctx context.Context, id LeaseID, e ending) error {
	b, _ := json.Marshal(e) // strings only: cannot fail
	_, err := a.cli.Put(ctx, endingKey(id), string(b), clientv3.WithLease(clientv3.LeaseID(id)))
	if err != nil {
		return leaseError("record how the lease ends", err)
	}
	return nil
}

// LeaseEnd is a lease whose lock was granted, seen as it ended.
type LeaseEnd struct {
	ID       LeaseID
	Resource string
	Token    tokens.Token // unsigned
	Owner    string       // "" when authentication is off
	How      string       // EndReleased, EndExpired or EndRevoked
	// Actor and Reason say who revoked it and why.
	Actor, Reason string
	// LockDelay: the resource's lock-delay holds the lock back after this
	// end (an expiry or a revoke, not a release).
	LockDelay bool
	At        time.Time // when this watch saw it
}

// EndsWatch is where WatchLeaseEnds starts and whom it tells.
type EndsWatch struct {
	// From is the revision to resume at: the ends at and after it are
	// reported, as long as etcd keeps them. 0 starts from now.
	From int64
	// Ended is told of every lease whose lock was granted, once its keys
	// are deleted.
	Ended func(LeaseEnd)
	// Reported, if set, is told after each batch of ends that every end
	// at or before rev has been passed to Ended.
	Reported func(rev int64)
	// Watching, if set, is called once etcd has set up the first watch:
	// every end after that is seen.
	Watching func()
	// Missed, if set, is told that etcd compacted past the revision the
	// watch had to resume at: the ends from revision from up to (not
	// including) to, if there were any, are not reported.
	Missed func(from, to int64)
}

// WatchLeaseEnds reports the ends of leases as w says, until ctx ends.
// Every replica that watches sees every end: recording them must be
// idempotent (the lock history keeps one end per lease). A watch cut off
// (leader lost) resumes after the last end it reported; one that etcd
// compacted past resumes at the oldest revision etcd keeps, and says so
// (w.Missed).
func (a *Etcd) WatchLeaseEnds(ctx context.Context, w EndsWatch) {
	next := w.From // 0: from now
	for ctx.Err() == nil {
		opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithFilterPut(), clientv3.WithPrevKV(), clientv3.WithCreatedNotify()}
		if next > 0 {
			opts = append(opts, clientv3.WithRev(next))
		}
		for resp := range a.cli.Watch(clientv3.WithRequireLeader(ctx), "/fencegw/", opts...) {
			if resp.CompactRevision != 0 {
				if w.Missed != nil {
					w.Missed(next, resp.CompactRevision)
				}
				next = resp.CompactRevision
				break
			}
			if resp.Err() != nil {
				break
			}
			if resp.Created && w.Watching != nil {
				w.Watching()
				w.Watching = nil
			}
			if len(resp.Events) == 0 {
				continue
			}
			a.reportEnds(ctx, resp.Events, w.Ended)
			// Through the last event's revision, not the header's: a watch
			// catching up sends the store's current revision in the header
			// of a batch that stops short of it.
			through := resp.Events[len(resp.Events)-1].Kv.ModRevision
			if w.Reported != nil {
				w.Reported(through)
			}
			next = through + 1
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second): // etcd away: try again, gently
		}
	}
}

// endSeen gathers what the deletion of one lease's keys says of it.
type endSeen struct {
	resource string
	revision int64 // the lock key's create revision: the token's
	owner    string
	held     bool
	delay    bool
	ending   ending
}

// reportEnds reads the deletions of one watch response: a lease's keys
// are deleted at one revision, and a response never splits a revision.
func (a *Etcd) reportEnds(ctx context.Context, evs []*clientv3.Event, ended func(LeaseEnd)) {
	seen := map[LeaseID]*endSeen{}
	of := func(idText string) *endSeen {
		id, err := ParseLeaseID(idText)
		if err != nil {
			return &endSeen{} // not a lease's key: gathered, never reported
		}
		if seen[id] == nil {
			seen[id] = &endSeen{}
		}
		return seen[id]
	}
	for _, ev := range evs {
		kv := ev.PrevKv
		if ev.Type != mvccpb.DELETE || kv == nil {
			continue
		}
		key := string(kv.Key)
		switch {
		case strings.HasPrefix(key, lockPrefix):
			resource, keyPrefix, ok := lockKeyResource(key)
			if ok {
				s := of(strings.TrimPrefix(key, keyPrefix))
				s.resource, s.revision = resource, kv.CreateRevision
			}
		case strings.HasPrefix(key, ownerPrefix):
			of(strings.TrimPrefix(key, ownerPrefix)).owner = string(kv.Value)
		case strings.HasPrefix(key, grantedPrefix):
			_, _, held, ok := parseGranted(string(kv.Value))
			of(strings.TrimPrefix(key, grantedPrefix)).held = ok && held
		case strings.HasPrefix(key, delayIndexPrefix):
			of(strings.TrimPrefix(key, delayIndexPrefix)).delay = true
		case strings.HasPrefix(key, endingPrefix):
			_ = json.Unmarshal(kv.Value, &of(strings.TrimPrefix(key, endingPrefix)).ending)
		}
	}
	// Bounded: an etcd that stops answering must not hold the watch up.
	ctx, cancel := bounded(ctx)
	defer cancel()
	var epochs func(int64) int64
	now := a.now()
	for id, s := range seen {
		if !s.held || s.resource == "" {
			continue // a waiter that never had the lock
		}
		if epochs == nil {
			var err error
			if epochs, err = a.epochsAt(ctx); err != nil {
				epochs = func(int64) int64 { return a.epoch.Load() }
			}
		}
		e := LeaseEnd{ID: id, Resource: s.resource, Token: tokens.Token{Epoch: epochs(s.revision), Revision: s.revision},
			Owner: s.owner, How: s.ending.How, Actor: s.ending.Actor, Reason: s.ending.Reason, At: now}
		if e.How != EndReleased && e.How != EndRevoked {
			e.How = EndExpired
		}
		e.LockDelay = s.delay && e.How != EndReleased
		ended(e)
	}
}

package authority

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

var (
	// ErrFutureRevision refuses to resume a watch after a revision etcd
	// has not reached: no etcd ever issued it, so nothing could resume.
	ErrFutureRevision = errors.New("authority: watch: revision not yet issued")
	// ErrSlowReader ends a watch whose reader fell a whole queue behind:
	// it resumes from the last event it took.
	ErrSlowReader = errors.New("authority: watch: the reader fell behind")
)

// EventType says what a LockEvent reports.
type EventType string

// Event types. A watch starts with the state (one state event per
// resource, then synced) unless it resumes; after it, each change in
// revision order. An ended lease is reported by how it ended.
const (
	EventState    EventType = "state"  // the lock as it is (Holder nil: free)
	EventSynced   EventType = "synced" // every state event sent; changes follow
	EventGranted  EventType = "granted"
	EventValue    EventType = "value" // the holder published a new value
	EventReleased EventType = EventType(EndingReleased)
	EventExpired  EventType = EventType(EndingExpired)
	EventRevoked  EventType = EventType(EndingRevoked)
	EventEnded    EventType = EventType(EndingUnknown) // how is compacted away
	// EventRelist: etcd compacted past the revision a watch resumed
	// after, so changes were lost; the state follows again, as at a start.
	EventRelist EventType = "relist"
	// EventProgress: every change up to Revision has been sent. An idle
	// watch resumed after it does not start from an older revision, which
	// etcd may have compacted meanwhile. Only with WatchOptions.Progress.
	EventProgress EventType = "progress"
)

// LockEvent is one thing a watch reports.
type LockEvent struct {
	Type     EventType
	Resource string // "" for synced and relist
	// Revision is the etcd revision of the change; of the state read for
	// state and synced; the compaction's for relist. A watch resumed
	// after it misses nothing that came later.
	Revision int64
	// Holder is the lock's holder (state, granted, value) or the lease
	// that ended. Its Owner stays empty; its TTL is read for state only.
	Holder *Contender
	// Transitions counts the lock's grants up to this event (0 where etcd
	// compacted it away).
	Transitions int64
	// Permit is the slot of a semaphore's watch the event is of (Resource
	// names the slot; Holder's token carries it); 0 in any other watch.
	Permit int
}

// WatchOptions says what a watch follows.
type WatchOptions struct {
	// Resource is the one lock to follow; if empty, Prefix names them:
	// every resource whose name starts with it.
	Resource, Prefix string
	// All follows every lock, with Resource and Prefix empty: said
	// outright, so that an empty prefix by mistake follows nothing.
	All bool
	// Permits, with Resource, follows the semaphore Resource of that many
	// permits: each of its slots, 1 to Permits, as a lock (the state of
	// every slot, free ones too, then each slot's changes).
	Permits int
	// After resumes a watch: the changes after this revision, without the
	// state. 0 starts with the state.
	After int64
	// Queue bounds the events sent and not yet taken; a reader that falls
	// that far behind is cut off (ErrSlowReader) rather than buffered for.
	Queue int
	// Progress, if set, is how often etcd is asked how far the watch has
	// come (EventProgress).
	Progress time.Duration
}

// LockWatch is a running watch.
type LockWatch struct {
	// Events delivers the events; closed when the watch ends (Err says
	// why).
	Events <-chan LockEvent

	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Stop ends the watch and waits for it.
func (w *LockWatch) Stop() {
	w.cancel()
	<-w.done
}

// Err is why the watch ended, once Events is closed: ctx's error,
// ErrSlowReader, or ErrUnavailable (etcd could not be followed).
func (w *LockWatch) Err() error {
	<-w.done
	return w.err
}

// Watch follows the locks opts names until ctx ends: an etcd watch of
// their holder records (holderrecord.go) from the revision of the state,
// or from opts.After, so that no change in between is missed. A watch
// resumed after a revision etcd has compacted away reports EventRelist
// and the state again. Each event a reader takes costs no etcd call but
// for ends (how the lease ended, read as it was before) and value changes
// (the transitions count).
func (a *Etcd) Watch(ctx context.Context, opts WatchOptions) (*LockWatch, error) {
	name := opts.Resource
	if name == "" {
		name = opts.Prefix
	}
	switch {
	case opts.All && name != "":
		return nil, fmt.Errorf("authority: watch: every lock, or %q: not both", name)
	case !opts.All:
		if err := tokens.CheckResource(name); err != nil {
			return nil, err
		}
	}
	if opts.Permits != 0 {
		if opts.Resource == "" {
			return nil, fmt.Errorf("%w: a watch of %d permits names its semaphore (Resource)", ErrBadPermits, opts.Permits)
		}
		if err := checkPermits(opts.Resource, AcquireOptions{Permits: opts.Permits}); err != nil {
			return nil, err
		}
	}
	if opts.Queue < 1 {
		return nil, fmt.Errorf("authority: watch: queue %d, want at least 1", opts.Queue)
	}
	if opts.After < 0 {
		return nil, fmt.Errorf("%w: %d", ErrFutureRevision, opts.After)
	}
	if opts.After > a.newestRevision.Load() {
		rctx, cancel := bounded(ctx)
		newest, err := a.Revision(rctx)
		cancel()
		if err != nil {
			return nil, err
		}
		if opts.After > newest {
			return nil, fmt.Errorf("%w: %d, and etcd is at %d", ErrFutureRevision, opts.After, newest)
		}
	}
	from := heldPrefix + url.PathEscape(opts.Prefix)
	switch {
	case opts.Permits > 0:
		// Every slot's records and no others': a slot's escaped name
		// starts with the escaped "<semaphore>#", and the semaphore's own
		// (which holds none) does not.
		from = heldPrefix + url.PathEscape(opts.Resource+tokens.PermitSeparator)
	case opts.Resource != "":
		from = heldKeyPrefix(opts.Resource)
	}
	ctx, cancel := context.WithCancel(ctx)
	events := make(chan LockEvent, opts.Queue)
	w := &LockWatch{Events: events, cancel: cancel, done: make(chan struct{})}
	f := &follower{a: a, from: from, end: clientv3.GetPrefixRangeEnd(from), one: opts.Resource, permits: opts.Permits, out: events, progress: opts.Progress}
	go func() { // owned by w: Stop, or ctx, ends it
		defer close(w.done)
		defer close(events)
		defer cancel()
		w.err = f.run(ctx, opts.After)
	}()
	return w, nil
}

// follower is one watch's loop.
type follower struct {
	a         *Etcd
	from, end string // the range of holder records followed
	one       string // the resource, for a watch of one (a semaphore's, with permits)
	permits   int    // a semaphore's, whose slots a watch of one follows; 0 for a lock
	out       chan<- LockEvent
	progress  time.Duration
}

// compactedError ends a follow that started after a compacted revision.
type compactedError struct{ rev int64 }

func (e *compactedError) Error() string { return fmt.Sprintf("compacted at %d", e.rev) }

func (f *follower) run(ctx context.Context, after int64) error {
	for {
		if after == 0 {
			rev, err := f.sendState(ctx)
			if err != nil {
				return err
			}
			after = rev
		}
		err := f.follow(ctx, after)
		var compacted *compactedError
		if !errors.As(err, &compacted) {
			return err
		}
		if err := f.send(ctx, LockEvent{Type: EventRelist, Revision: compacted.rev}); err != nil {
			return err
		}
		after = 0
	}
}

// send hands ev to the reader, waiting for it: only while no etcd watch
// is open, which would buffer for a reader that waits.
func (f *follower) send(ctx context.Context, ev LockEvent) error {
	select {
	case f.out <- ev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// follow sends every change after revision after, until ctx ends or etcd
// fails.
func (f *follower) follow(ctx context.Context, after int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	transitions := map[string]int64{} // known counts, so most events need no read
	var ask <-chan time.Time
	if f.progress > 0 {
		t := time.NewTicker(f.progress)
		defer t.Stop()
		ask = t.C
	}
	changes := f.a.cli.Watch(wctx, f.from, clientv3.WithRange(f.end), clientv3.WithRev(after+1), clientv3.WithPrevKV())
	for {
		var wr clientv3.WatchResponse
		var open bool
		select {
		case wr, open = <-changes:
		case <-ask:
			// etcd answers on every watch of this stream once each is
			// synced: a progress notification at the revision it reached.
			_ = f.a.cli.RequestProgress(wctx)
			continue
		}
		if !open {
			break
		}
		if wr.CompactRevision != 0 {
			return &compactedError{rev: wr.CompactRevision}
		}
		if err := wr.Err(); err != nil {
			return unavailable("watch locks", err)
		}
		f.a.observe(wr.Header.Revision)
		evs := f.changes(ctx, wr.Events, transitions)
		if wr.IsProgressNotify() && f.progress > 0 {
			evs = append(evs, LockEvent{Type: EventProgress, Revision: wr.Header.Revision})
		}
		for _, ev := range evs {
			select {
			case f.out <- ev:
			default:
				return fmt.Errorf("%w: %d events not taken", ErrSlowReader, cap(f.out))
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return unavailable("watch locks", errors.New("etcd closed the watch"))
}

// changes turns one watch response's etcd events into lock events: a
// grant writes the transitions key and the holder record at one revision
// (one event), a value change rewrites the record, an end deletes it.
func (f *follower) changes(ctx context.Context, evs []*clientv3.Event, transitions map[string]int64) []LockEvent {
	type at struct {
		resource string
		rev      int64
	}
	granted := map[at]int64{}
	for _, ev := range evs {
		if resource, name, ok := heldKeyParts(string(ev.Kv.Key)); ok && name == transitionsName && ev.Type == mvccpb.PUT {
			granted[at{resource, ev.Kv.ModRevision}] = ev.Kv.Version
		}
	}
	var out []LockEvent
	for _, ev := range evs {
		resource, name, ok := heldKeyParts(string(ev.Kv.Key))
		if !ok || name != holderRecordName {
			continue
		}
		permit, ok := f.slot(resource)
		if !ok {
			continue
		}
		rev := ev.Kv.ModRevision
		kv := ev.Kv
		if ev.Type == mvccpb.DELETE {
			if kv = ev.PrevKv; kv == nil {
				continue
			}
		}
		rec, id, ok := parseHolderRecord(kv.Value)
		if !ok {
			continue
		}
		le := LockEvent{Resource: resource, Revision: rev, Holder: recordHolder(rec, kv, id, permit), Permit: permit}
		switch n, ok := granted[at{resource, rev}]; {
		case ev.Type == mvccpb.PUT && ok:
			le.Type, le.Transitions = EventGranted, n
			transitions[resource] = n
		case ev.Type == mvccpb.PUT:
			le.Type = EventValue
		default:
			le.Type = EventType(f.ending(ctx, id, rev))
		}
		if le.Transitions == 0 {
			if n, ok := transitions[resource]; ok {
				le.Transitions = n
			} else {
				le.Transitions = f.transitionsAt(ctx, resource, rev)
				transitions[resource] = le.Transitions
			}
		}
		out = append(out, le)
	}
	return out
}

// ending reads how lease id ended at revision rev: its mark just before.
func (f *follower) ending(ctx context.Context, id LeaseID, rev int64) Ending {
	rctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := f.a.cli.Get(rctx, endingKey(id), clientv3.WithRev(rev-1))
	switch {
	case err != nil:
		return EndingUnknown
	case len(resp.Kvs) == 0:
		return EndingExpired
	}
	var e ending
	if json.Unmarshal(resp.Kvs[0].Value, &e) != nil {
		return EndingUnknown
	}
	return Ending(e.How)
}

// transitionsAt reads a resource's count of grants at revision rev; 0 if
// etcd cannot say.
func (f *follower) transitionsAt(ctx context.Context, resource string, rev int64) int64 {
	rctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := f.a.cli.Get(rctx, transitionsKey(resource), clientv3.WithRev(rev), clientv3.WithKeysOnly())
	if err != nil {
		return 0
	}
	return versionOf(resp.Kvs)
}

// statePage is how many holder records a state reads at once.
const statePage = 256

// sendState sends each followed lock's state, read at one revision (a
// semaphore's: every slot's, in permit order), then EventSynced, and
// returns the revision.
func (f *follower) sendState(ctx context.Context) (int64, error) {
	var slots []LockEvent // a semaphore's, by permit
	sent := false
	emit := func(ev LockEvent) error {
		if f.permits > 0 {
			slots[ev.Permit-1] = ev
			return nil
		}
		sent = true
		return f.sendLockState(ctx, ev)
	}
	var rev int64
	for {
		slots = make([]LockEvent, f.permits)
		var err error
		rev, err = f.readState(ctx, emit)
		if errors.Is(err, rpctypes.ErrCompacted) {
			continue // compacted under the walk: again, at a new revision
		}
		if err != nil {
			return 0, err
		}
		break
	}
	for k, ev := range slots {
		if ev.Resource == "" { // free
			ev = LockEvent{Type: EventState, Resource: tokens.PermitResource(f.one, k+1), Revision: rev, Permit: k + 1}
		}
		if err := f.sendLockState(ctx, ev); err != nil {
			return 0, err
		}
	}
	if f.one != "" && f.permits == 0 && !sent {
		if err := f.send(ctx, LockEvent{Type: EventState, Resource: f.one, Revision: rev}); err != nil { // never locked
			return 0, err
		}
	}
	return rev, f.send(ctx, LockEvent{Type: EventSynced, Revision: rev})
}

// sendLockState sends one lock's state, with its holder's TTL.
func (f *follower) sendLockState(ctx context.Context, ev LockEvent) error {
	if ev.Holder != nil {
		ev.Holder.TTL = f.a.leaseTTL(ctx, ev.Holder.LeaseID)
	}
	return f.send(ctx, ev)
}

// readState reads the followed locks' holder records at one revision, a
// page at a time, and hands each lock's state to emit. An error wrapping
// rpctypes.ErrCompacted means etcd compacted the revision under the walk.
func (f *follower) readState(ctx context.Context, emit func(LockEvent) error) (int64, error) {
	var rev int64
	pending := LockEvent{} // the resource being read: its two keys may span pages
	flush := func() error {
		if pending.Resource == "" {
			return nil
		}
		ev := pending
		pending = LockEvent{}
		return emit(ev)
	}
	for from := f.from; ; {
		opts := []clientv3.OpOption{clientv3.WithRange(f.end), clientv3.WithLimit(statePage)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		rctx, cancel := bounded(ctx)
		resp, err := f.a.cli.Get(rctx, from, opts...)
		cancel()
		if errors.Is(err, rpctypes.ErrCompacted) {
			return 0, err
		}
		if err != nil {
			return 0, unavailable("read locks", err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
			f.a.observe(rev)
		}
		for _, kv := range resp.Kvs {
			resource, name, ok := heldKeyParts(string(kv.Key))
			if !ok {
				continue
			}
			permit, ok := f.slot(resource)
			if !ok {
				continue
			}
			if resource != pending.Resource {
				if err := flush(); err != nil {
					return 0, err
				}
				pending = LockEvent{Type: EventState, Resource: resource, Revision: rev, Permit: permit}
			}
			if name == transitionsName {
				pending.Transitions = kv.Version
			} else if rec, id, ok := parseHolderRecord(kv.Value); ok {
				pending.Holder = recordHolder(rec, kv, id, permit)
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	return rev, flush()
}

// slot says whether a watch follows resource and, in a semaphore's watch,
// which of its slots resource is: under the semaphore's slots' prefix
// lie names that are no slot of it (a slot past its permits, "pool#1x").
func (f *follower) slot(resource string) (permit int, ok bool) {
	if f.permits == 0 {
		return 0, true
	}
	sem, k, ok := tokens.SplitPermitResource(resource)
	if !ok || sem != f.one || k > f.permits {
		return 0, false
	}
	return k, true
}

// recordHolder is the holder the holder record kv (rec) names; its token
// carries the permit of a semaphore's slot, as ObserveSemaphore shows it.
func recordHolder(rec holderRecord, kv *mvccpb.KeyValue, id LeaseID, permit int) *Contender {
	tok := rec.token(kv)
	tok.Permit = permit
	return &Contender{LeaseID: id, Token: tok, Value: rec.Value}
}

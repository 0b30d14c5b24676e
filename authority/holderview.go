package authority

import (
	"context"
	"sync"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// A HolderView keeps every lock's holder in view from one watch of the
// holder records (Watch, All), so that a check that would read etcd per
// call (the SQL front's at COMMIT) can look instead. It answers only
// while it is known to be as new as this process: its watch follows
// etcd, and it has seen every change up to the newest revision any etcd
// answer to this process has shown. So a lock granted through this
// replica is in view before its grant is answered; one granted through
// another replica shows once the watch delivers it. Otherwise it says it
// does not know, and the caller reads etcd as before.

// viewRestart is the pause before a view's broken watch is started
// again, so that an etcd that is down is not asked in a loop.
const viewRestart = time.Second

// viewProgress is how often the view asks etcd how far its watch has
// come, so that revisions that changed no lock (other keys of the
// prefix) do not leave it behind this process for long.
const viewProgress = time.Second

// viewQueue bounds the events the watch holds for the view; a view that
// falls that far behind starts over from the state.
const viewQueue = 4096

// HolderView is a watched view of every lock's holder; ViewHolders
// starts one, Stop ends it.
type HolderView struct {
	a      *Etcd
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.RWMutex
	held   map[string]tokens.Token // resource -> its holder's token
	synced bool                    // the state was read and the watch follows
	rev    int64                   // every change up to here is in held
	// epoch is the authority's epoch when the watch started: a new one
	// (Resume after a restored etcd) starts the revisions this process
	// knows afresh, lower than rev, from an etcd the watch may not follow.
	epoch int64
}

// ViewHolders starts a view of every lock's holder; it follows etcd
// until Stop, starting its watch again whenever it breaks.
func (a *Etcd) ViewHolders() *HolderView {
	ctx, cancel := context.WithCancel(context.Background())
	v := &HolderView{a: a, cancel: cancel, done: make(chan struct{}), held: map[string]tokens.Token{}}
	go func() { // owned by v: Stop ends it
		defer close(v.done)
		v.run(ctx)
	}()
	return v
}

// Stop ends the view and waits for its watch to end.
func (v *HolderView) Stop() {
	v.cancel()
	<-v.done
}

// Holder returns resource's holder as the view has it (held false:
// nobody holds it), and known false when the view cannot say: it does
// not follow etcd now, it has not seen every change up to the newest
// revision this process knows, or the holder's epoch is no longer known
// (a compaction past an epoch bump).
func (v *HolderView) Holder(resource string) (tok tokens.Token, held, known bool) {
	// The revision before the epoch: Resume lowers the one after
	// changing the other, so a view of the old epoch never meets the
	// new epoch's revisions.
	newest := v.a.NewestRevision()
	epoch := v.a.Epoch()
	v.mu.RLock()
	defer v.mu.RUnlock()
	if !v.synced || v.rev < newest || v.epoch != epoch {
		return tokens.Token{}, false, false
	}
	tok, held = v.held[resource]
	if held && tok.Epoch == 0 {
		return tokens.Token{}, false, false
	}
	return tok, held, true
}

// run follows the holder records until ctx ends.
func (v *HolderView) run(ctx context.Context) {
	for ctx.Err() == nil {
		epoch := v.a.Epoch()
		v.mu.Lock()
		v.epoch = epoch
		v.mu.Unlock()
		w, err := v.a.Watch(ctx, WatchOptions{All: true, Queue: viewQueue, Progress: viewProgress})
		if err == nil {
			v.follow(w, epoch)
		}
		v.forget()
		select {
		case <-ctx.Done():
		case <-time.After(viewRestart):
		}
	}
}

// follow applies w's events until it ends or the authority's epoch is
// no longer epoch: a new epoch may be a replaced etcd that counts from
// lower, which w, resumed past its revisions, would not deliver, nor
// perhaps anything else.
func (v *HolderView) follow(w *LockWatch, epoch int64) {
	defer w.Stop()
	tick := time.NewTicker(viewProgress)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok || v.a.Epoch() != epoch {
				return
			}
			v.apply(ev)
		case <-tick.C:
			if v.a.Epoch() != epoch {
				return
			}
		}
	}
}

// apply takes one event of the watch into the view.
func (v *HolderView) apply(ev LockEvent) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch ev.Type {
	case EventState, EventGranted, EventValue:
		if ev.Holder == nil {
			delete(v.held, ev.Resource)
		} else {
			v.held[ev.Resource] = ev.Holder.Token
		}
	case EventReleased, EventExpired, EventRevoked, EventEnded:
		if t, ok := v.held[ev.Resource]; ok && (ev.Holder == nil || t.Compare(ev.Holder.Token) == 0) {
			delete(v.held, ev.Resource)
		}
	case EventSynced:
		v.synced = true
	case EventRelist:
		// The state follows again, resource by resource: until it is
		// all there, the view knows nothing.
		v.synced = false
		clear(v.held)
	}
	v.rev = max(v.rev, ev.Revision)
}

// forget empties the view when its watch ended: until a new one has read
// the state, it knows nothing.
func (v *HolderView) forget() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.synced = false
	v.rev = 0
	clear(v.held)
}

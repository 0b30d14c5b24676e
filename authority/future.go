package authority

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// A token from the future: a revision above any etcd has issued, or an
// epoch above etcd's, was issued by nobody. Signed with a leaked key, it
// would still pass its signature; applied, it would lift its resource's
// fence so high that every real holder is refused until an epoch bump
// ("token poisoning"). So every validation mode refuses it, at the cost of
// one etcd read for such tokens only: a token at or below the newest
// revision this process has seen, of the current epoch, needs none.

// checkIssued refuses tok unless this epoch's etcd may have issued it: its
// epoch is the current one and its revision not above the newest etcd has
// issued. A token above what this process knows is checked against etcd
// with one read (etcdNow) and refused as never issued if it is still
// above; a token of an older epoch is refused as issued (it was, once).
// A newer epoch that etcd does have is refused as issued too: this
// process has not caught up (the gateway rechecks its authority on it).
func (a *Etcd) checkIssued(ctx context.Context, tok tokens.Token) error {
	if err := a.Halted(); err != nil {
		return err
	}
	epoch := a.epoch.Load()
	switch {
	case tok.Epoch < epoch:
		return notCurrent(tok, epoch)
	case tok.Epoch == epoch && tok.Revision <= a.newestRevision.Load():
		return nil // the normal path: no etcd
	}
	ctx, cancel := context.WithTimeout(ctx, ValidateTimeout)
	defer cancel()
	now, err := a.etcdNow(ctx, time.Now())
	if err != nil {
		return err
	}
	switch {
	case tok.Epoch > now.epoch:
		return &tokens.RejectedError{Presented: tok.Unsigned(),
			Reason: fmt.Sprintf("epoch %d is above etcd's epoch %d: no authority issued it", tok.Epoch, now.epoch)}
	case tok.Epoch > epoch:
		return notCurrent(tok, epoch)
	case tok.Revision > now.revision:
		return &tokens.RejectedError{Presented: tok.Unsigned(),
			Reason: fmt.Sprintf("revision %d is above the newest revision etcd has issued (%d)", tok.Revision, now.revision)}
	}
	// The epoch may have changed while etcd was read: ask again.
	if err := a.Halted(); err != nil {
		return err
	}
	if epoch := a.epoch.Load(); tok.Epoch != epoch {
		return notCurrent(tok, epoch)
	}
	return nil
}

// notCurrent refuses a token of an epoch that is not the current one, as
// one the authority issued (or may have: a newer epoch this process has
// not caught up with).
func notCurrent(tok tokens.Token, epoch int64) error {
	return &tokens.RejectedError{Presented: tok.Unsigned(), Issued: true,
		Reason: fmt.Sprintf("epoch %d is not the current epoch %d", tok.Epoch, epoch)}
}

// etcdView is what one read of the epoch key says: etcd's epoch, and its
// revision at the read.
type etcdView struct{ epoch, revision int64 }

// etcdNow returns etcd's epoch and revision as a read that began at or
// after since saw them: a token presented at since was issued, if at all,
// before it, and only such a read can tell. One read runs at a time;
// callers that queued behind it while it ran share the next one, so a
// flood of forged tokens costs etcd one read in flight, however many
// requests carry them. ctx bounds the wait and the read.
func (a *Etcd) etcdNow(ctx context.Context, since time.Time) (etcdView, error) {
	select {
	case a.nowLock <- struct{}{}:
	case <-ctx.Done():
		return etcdView{}, unavailable("wait for a read of etcd's revision", ctx.Err())
	}
	defer func() { <-a.nowLock }()
	if a.nowRead.started.IsZero() || a.nowRead.started.Before(since) {
		started := time.Now() // a linearizable read sees every revision issued before it began
		seen := a.seen()
		resp, err := a.cli.Get(ctx, epochKey)
		if err != nil {
			return etcdView{}, unavailable("read revision", err)
		}
		epoch, err := epochOf(resp.Kvs)
		if err != nil {
			// A foreign epoch key: the watchdog halts on it; nothing is
			// decided here.
			return etcdView{}, unavailable("read epoch", err)
		}
		if err := a.checkEpochRead(seen, epoch, resp.Header.Revision); err != nil {
			return etcdView{}, err
		}
		a.observe(resp.Header.Revision)
		a.nowRead.started, a.nowRead.view = started, etcdView{epoch: epoch, revision: resp.Header.Revision}
	}
	return a.nowRead.view, nil
}

// Waits reports whether Validate of tok, presented by client for a write
// of resource, may wait on etcd beyond what its mode always asks (holder
// validation's read): for a signature no loaded key verifies (a key
// rotated in, or a forgery: only a reload of the keys can tell), or for a
// token above the newest revision this process has seen or of an epoch
// not its own. The gateway gives its admission turn back for such a wait.
// It asks nothing of etcd.
func (a *Etcd) Waits(resource, client string, tok tokens.Token, mode tokens.Validation) bool {
	if mode != tokens.ValidateRevision {
		if set := a.keys.Load(); set == nil || !set.ring.Verify(tok, resource, client) {
			return true
		}
	}
	return tok.Epoch != a.epoch.Load() || tok.Revision > a.newestRevision.Load()
}

package authority

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// DefaultCheckEvery is how often a gateway compares etcd with what the
// resource side remembers of it: the longest a rollback goes unnoticed.
const DefaultCheckEvery = 2 * time.Second

// RecordStore is the resource side's memory of the authority (in
// PostgreSQL: package fence's Records).
type RecordStore interface {
	// Load returns the record of the current epoch.
	Load(ctx context.Context) (tokens.Record, error)
	// Save records the cluster and a newer revision for rec's epoch.
	Save(ctx context.Context, rec tokens.Record) error
	// Start records a new epoch.
	Start(ctx context.Context, rec tokens.Record) error
}

// Watchdog keeps an authority honest against the resource side's record: it
// halts the authority when etcd went back in time or was replaced, and
// resumes it once an operator has bumped the epoch.
type Watchdog struct {
	auth    *Etcd
	records RecordStore
	log     *slog.Logger

	mu sync.Mutex // one check at a time
	// unusable is what the last check logged of the keys that do not
	// open, so that each state is logged once; guarded by mu.
	unusable string
	// haltLogged: the halt in force was logged (by a check, or a check
	// confirmed one a validation began); guarded by mu.
	haltLogged bool
	// lastRecheck is when a token of an unknown newer epoch last
	// triggered a check, in ns on the monotonic clock since monoOrigin; 0:
	// never.
	lastRecheck atomic.Int64
}

// NewWatchdog returns the rollback watchdog of auth against records.
func NewWatchdog(auth *Etcd, records RecordStore, log *slog.Logger) *Watchdog {
	return &Watchdog{auth: auth, records: records, log: log}
}

// Check runs one reconciliation of etcd with the record: it halts the
// authority if etcd went backwards (lower epoch or revision, another
// cluster), and otherwise records the newest revision and resumes it. An
// unreachable etcd or PostgreSQL is reported, not a reason to halt.
func (w *Watchdog) Check(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	a := w.auth
	// Everything compared with etcd's view must be read before it: the view
	// is linearizable, so it is at least as new as any revision seen
	// earlier, here or by another replica that recorded it. Read after it,
	// normal traffic would look like etcd going back in time.
	halts := a.Halts() // before the view: a halt after it is not this check's to lift
	rec, err := w.records.Load(ctx)
	if err != nil {
		return err
	}
	var seen int64
	if a.Epoch() == rec.Epoch {
		seen = a.NewestRevision()
	}
	view, err := a.IdentifiedView(ctx)
	if errors.Is(err, ErrForeignKey) {
		return w.halt(&tokens.HaltedError{Reason: err.Error()})
	}
	if err != nil {
		return err
	}
	next, err := tokens.Reconcile(view, rec, seen)
	var halt *tokens.HaltedError
	if errors.As(err, &halt) {
		return w.halt(halt)
	}
	if err := w.records.Save(ctx, next); err != nil {
		return err
	}
	wasOut := a.Halted() != nil || a.Epoch() != next.Epoch
	if !a.ResumeFrom(halts, next.Epoch, view.Revision) {
		// A validation met etcd behind what this process saw after this
		// check read its view: the next check judges it on a newer one.
		err := a.Halted()
		var halt *tokens.HaltedError
		if errors.As(err, &halt) {
			w.logHalt(halt)
		}
		return err
	}
	if wasOut {
		w.haltLogged = false
		w.log.Info("token authority in service", "epoch", next.Epoch, "etcd_cluster", next.ClusterID, "etcd_identity", next.Identity, "revision", view.Revision)
	}
	// A rotated signing key reaches this replica within a check: before
	// it signs anywhere (authority.DefaultSignAfter).
	if _, err := a.ReloadKeys(ctx); err != nil {
		return err
	}
	w.logUnusableKeys(a.UnusableKeys())
	// The store's size is a metric: not reading it leaves the last value,
	// and the authority, which has just been checked, in service.
	if err := a.ReadStoreSize(ctx); err != nil {
		w.log.Warn("reading etcd's store size failed; its metrics keep their last values", "error", err)
	}
	return nil
}

// logUnusableKeys logs each signing key that does not open, once per
// state of them: a key of a KEK this replica lacks, altered, or in clear.
func (w *Watchdog) logUnusableKeys(keys []UnusableKey) {
	var state strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&state, "%s %t %v\n", k.ID, k.Retired, k.Err)
	}
	if state.String() == w.unusable {
		return
	}
	w.unusable = state.String()
	for _, k := range keys {
		if k.Retired {
			w.log.Error("a retired signing key in etcd does not open here: its tokens are refused as never issued rather than as retired", "key_id", k.ID, "error", k.Err.Error())
			continue
		}
		w.log.Error("a signing key in etcd does not open here: a token no other key verifies is answered 503 while it is in service", "key_id", k.ID, "error", k.Err.Error())
	}
	if len(keys) == 0 {
		w.log.Info("every signing key in etcd opens here")
	}
}

// logHalt says, once a halt, why the authority is halted.
func (w *Watchdog) logHalt(reason *tokens.HaltedError) {
	if !w.haltLogged {
		w.log.Error("token authority halted: writes and leases are refused", "reason", reason.Reason)
		w.haltLogged = true
	}
}

// halt stops the authority for the reason given, saying so once. A
// validation that met etcd behind what this process saw halts the
// authority itself (checkEpochRead) and logs nothing: the first check after it
// says so.
func (w *Watchdog) halt(reason *tokens.HaltedError) error {
	w.logHalt(reason)
	w.auth.Halt(reason)
	return reason
}

// recheckEvery bounds the checks that tokens of a newer epoch than this
// gateway knows can trigger: a forged one must not buy a PostgreSQL query
// and an etcd read per request.
const recheckEvery = 250 * time.Millisecond

// monoOrigin anchors the watchdog's monotonic readings: time.Since reads the
// monotonic clock, so a wall clock stepped back cannot stop the rechecks
// for the length of the step, as unix time would.
var monoOrigin = time.Now()

// Recheck runs Check at once, unless one ran on demand less than
// recheckEvery ago, and reports whether it ran and succeeded. A gateway
// calls it on meeting a token of an epoch newer than it knows: a lease
// taken right after a bump carries the new epoch before the watchdog's next
// periodic check.
func (w *Watchdog) Recheck(ctx context.Context) bool {
	now, last := int64(time.Since(monoOrigin)), w.lastRecheck.Load()
	if (last != 0 && now-last < int64(recheckEvery)) || !w.lastRecheck.CompareAndSwap(last, now) {
		return false
	}
	return w.Check(ctx) == nil
}

// Run calls Check every interval until ctx ends.
func (w *Watchdog) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, every)
		if err := w.Check(cctx); err != nil && ctx.Err() == nil && !errors.Is(err, tokens.ErrHalted) {
			w.log.Warn("checking the token authority failed", "error", err)
		}
		cancel()
	}
}

// Bump starts a new epoch after etcd was restored or replaced: one above
// both etcd's and the record's, recorded first on the resource side (with
// etcd's current cluster, identity and revision) and then in etcd; an epoch
// or identity key someone else wrote is replaced. Every token of an
// older epoch is stale from then on. Gateways resume at their next check.
// BumpPlan is what Bump would do, read without writing anything.
type BumpPlan struct {
	From, To int64 // the epoch now (the higher of etcd's and PostgreSQL's), and the next
	// Foreign: etcd holds epoch or identity keys fencegw did not write,
	// which the bump would delete first.
	Foreign bool
	// Identify: etcd's data has no identity yet, which the bump would
	// give it.
	Identify bool
	Etcd     tokens.View
	Recorded tokens.Record
}

// PlanBump says what Bump would do now, writing nothing (`fencegw epoch
// bump --dry-run`).
func PlanBump(ctx context.Context, auth *Etcd, records RecordStore) (BumpPlan, error) {
	var p BumpPlan
	view, err := auth.View(ctx)
	switch {
	case errors.Is(err, ErrForeignKey):
		p.Foreign = true
	case err != nil:
		return p, err
	default:
		p.Etcd, p.Identify = view, view.Identity == ""
	}
	if p.Recorded, err = records.Load(ctx); err != nil {
		return p, err
	}
	p.From = max(p.Etcd.Epoch, p.Recorded.Epoch)
	p.To = p.From + 1
	return p, nil
}

func Bump(ctx context.Context, auth *Etcd, records RecordStore) (int64, error) {
	view, err := auth.IdentifiedView(ctx)
	if errors.Is(err, ErrForeignKey) {
		if err := auth.clearForeignKeys(ctx); err != nil {
			return 0, err
		}
		view, err = auth.IdentifiedView(ctx)
	}
	if err != nil {
		return 0, err
	}
	rec, err := records.Load(ctx)
	if err != nil {
		return 0, err
	}
	next := max(view.Epoch, rec.Epoch) + 1
	if err := records.Start(ctx, tokens.Record{Epoch: next, ClusterID: view.ClusterID, Identity: view.Identity, MaxRevision: view.Revision}); err != nil {
		return 0, fmt.Errorf("authority: epoch bump: %w", err)
	}
	// If this fails, PostgreSQL is ahead of etcd and the gateways stay
	// halted; running the bump again moves both to the next epoch.
	if err := auth.SetEpoch(ctx, next); err != nil {
		return 0, fmt.Errorf("authority: epoch bump: epoch %d is in PostgreSQL but not in etcd, run the bump again: %w", next, err)
	}
	return next, nil
}

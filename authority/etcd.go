package authority

import (
	"context"
	"fmt"
	"github.com/fencegw/fencegw/tokens"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Key layout in etcd. Resources are path-escaped inside lockPrefix so that
// the lock prefix of "a" can never contain the keys of "a/b".
const (
	lockPrefix  = "/fencegw/locks/"
	ownerPrefix = "/fencegw/owners/"
	epochKey    = "/fencegw/epoch"
	identityKey = "/fencegw/identity"
)

// Etcd is the token authority backed by an etcd cluster. It keeps no lease
// state: any number of gateways may share one cluster.
type Etcd struct {
	cli   *clientv3.Client
	epoch atomic.Int64

	mu         sync.Mutex
	haltReason *tokens.HaltedError

	// now is the wall clock of hold-time records (holdtime.go), which the
	// replica that granted a lease reads again at its end. Lock-delay and
	// waits read no wall clock: tests set now to show it.
	now func() time.Time

	// newestRevision is the highest revision any etcd response has shown
	// this process. It only grows, so a token at or below it was certainly
	// issued; a token above it costs one linearizable read to re-check.
	newestRevision atomic.Int64

	// keks open the signing keys (keyseal.go); nil: no keys, no tokens.
	keks      KEKs
	readClear atomic.Bool // keys stored in clear are used too (ReadClearKeys)
	// keys sign and verify tokens (keys.go); nil until first needed.
	keys     atomic.Pointer[keySet]
	keysLock chan struct{} // one load at a time; a channel, so a wait for it can end with its ctx
	// keysStarted is when the last load began, keysErr its error; both
	// guarded by keysLock.
	keysStarted time.Time
	keysErr     error

	// nowLock lets one read of etcd's epoch and revision run at a time
	// (etcdNow, future.go); nowRead is the last one, guarded by nowLock.
	nowLock chan struct{}
	nowRead struct {
		started time.Time
		view    etcdView
	}

	dbSize, dbInUse atomic.Int64 // etcd's store, as ReadStoreSize last found it

	transitions atomic.Int64 // grants this process recorded (Transitions)

	// epochRead is the epoch key as this process last read it: a grant
	// compares it instead of reading it (lockgrant.go). nil: not read yet.
	epochRead atomic.Pointer[epochAt]
}

// NewEtcd returns the authority for cli, at DefaultEpoch until Resume sets
// the epoch that etcd and PostgreSQL agree on. keks open the signing keys
// and seal new ones; an authority without (nil) reads etcd but never
// signs nor verifies a token (ErrNoKEK): inspect, epoch.
func NewEtcd(cli *clientv3.Client, keks KEKs) *Etcd {
	a := &Etcd{cli: cli, keks: keks, now: time.Now, keysLock: make(chan struct{}, 1), nowLock: make(chan struct{}, 1)}
	a.epoch.Store(tokens.DefaultEpoch)
	return a
}

// UseClock makes the hold records read now instead of time.Now: its wall
// reading times max_hold and hold times, its monotonic reading the
// Reaper's wait for a renewal. Both bound liveness, not safety, which
// `fencegw torture` shows by stepping a gateway's clocks through it. Call
// it before the authority is used.
func (a *Etcd) UseClock(now func() time.Time) { a.now = now }

// Epoch returns the current epoch: the only one whose tokens are accepted.
func (a *Etcd) Epoch() int64 { return a.epoch.Load() }

// NewestRevision returns the highest etcd revision this process has seen.
func (a *Etcd) NewestRevision() int64 { return a.newestRevision.Load() }

// Validate checks the authority's word on tok, presented by client for a
// write of resource:
//   - ValidateFence: the gateway issued tok for this resource and client
//     (its signature), its epoch is current and its revision not above the
//     newest etcd has issued. No etcd call, unless the signature is by a key
//     this process has not loaded yet, or the token is above the newest
//     revision this process has seen (checkIssued).
//   - ValidateHolder: that, and tok is the live holder of resource's lock
//     now (a linearizable etcd read per write).
//   - ValidateRevision: tok is a number, not a capability: its epoch is
//     current and its revision not above the newest etcd has issued; a
//     signature is ignored.
//
// Whatever the mode, a token from the future (a revision or an epoch above
// etcd's) is refused as never issued: signed with a leaked key, it would
// otherwise lock every real holder out until an epoch bump ("token
// poisoning"). The signature is judged first, so an unsigned forgery costs
// no etcd read.
//
// The reads it needs are bounded by ctx and by ValidateTimeout, so that a
// write fails fast with etcd gone instead of waiting out its own deadline.
//
// Validation is the authority's word only, and already old when the write
// commits: a holder can lose its lease right after this check. The fence
// comparison in PostgreSQL is what keeps a stale holder out.
func (a *Etcd) Validate(ctx context.Context, resource, client string, tok tokens.Token, mode tokens.Validation) error {
	if mode == tokens.ValidateRevision {
		return a.checkIssued(ctx, tok)
	}
	if set := a.keys.Load(); mode != tokens.ValidateHolder && set != nil && set.ring.Verify(tok, resource, client) {
		return a.checkIssued(ctx, tok) // the common case: no etcd, no deadline to set up
	}
	ctx, cancel := context.WithTimeout(ctx, ValidateTimeout)
	defer cancel()
	if err := a.checkSigned(ctx, resource, client, tok); err != nil {
		return err
	}
	if err := a.checkIssued(ctx, tok); err != nil || mode != tokens.ValidateHolder {
		return err
	}
	holder, ok, err := a.Holder(ctx, resource)
	switch {
	case err != nil:
		return err
	case !ok:
		return &tokens.RejectedError{Presented: tok.Unsigned(), Issued: true, Reason: "no live holder of " + resource + ": the lease expired or was released"}
	case holder.Compare(tok) != 0:
		return &tokens.RejectedError{Presented: tok.Unsigned(), Issued: true, Reason: fmt.Sprintf("not the live holder of %s (the holder is %s)", resource, holder)}
	}
	return nil
}

// CheckSignature decides what Validate decides first: whether tok is
// signed by this authority for resource and client, by a key not retired
// (nothing is signed under validation: revision). It reads etcd only for
// a signature no loaded key verifies (a key rotated in since the last
// load), never whether the token was issued or its holder: the gateway
// asks it before a call takes its turn at the admission gate, so that a
// forgery never holds one.
func (a *Etcd) CheckSignature(ctx context.Context, resource, client string, tok tokens.Token, mode tokens.Validation) error {
	if mode == tokens.ValidateRevision {
		return nil
	}
	if set := a.keys.Load(); set != nil && set.ring.Verify(tok, resource, client) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ValidateTimeout)
	defer cancel()
	return a.checkSigned(ctx, resource, client, tok)
}

// checkSigned refuses a token the gateway did not issue for resource and
// client (unsigned, or signed for another resource or client), and one
// signed by a retired key. A signature no loaded key verifies may be by a
// key rotated in since this process loaded its keys: only etcd can say
// (keysReadSince), so if the keys cannot be read again the answer is that
// the authority is unavailable, never a refusal a retry would contradict.
func (a *Etcd) checkSigned(ctx context.Context, resource, client string, tok tokens.Token) error {
	presented := time.Now()
	set, err := a.keySet(ctx)
	if err != nil {
		return err
	}
	if set.ring.Verify(tok, resource, client) {
		return nil
	}
	if tok.Signed() && !set.retiredSigned(tok, resource, client) {
		// A retired key is never brought back: that answer needs no etcd.
		if set, err = a.keysReadSince(ctx, presented); err != nil {
			return err
		}
		if set.ring.Verify(tok, resource, client) {
			return nil
		}
		if ids := set.unopened(); len(ids) > 0 {
			// One of the keys this replica cannot open may have signed it:
			// a refusal another replica would contradict is no answer.
			return unavailable("verify a token's signature", fmt.Errorf("%w: key %s, which may have signed it, does not open here (fencegw keys list names its KEK)", ErrKeysSealed, strings.Join(ids, ", ")))
		}
	}
	switch {
	case !tok.Signed():
		return &tokens.RejectedError{Presented: tok.Unsigned(), Reason: "unsigned: send the token your lease was granted with (E:R:SIGNATURE)"}
	case set.retiredSigned(tok, resource, client):
		return &tokens.RejectedError{Presented: tok.Unsigned(), Issued: true, Retired: true,
			Reason: "signed by a retired key (fencegw keys retire): take a new lease"}
	}
	why := "not issued by this authority for " + resource
	if client != "" {
		why += " to client " + client
	}
	return &tokens.RejectedError{Presented: tok.Unsigned(), Reason: why}
}

// Sign signs tok for resource and client with the newest key.
func (a *Etcd) Sign(ctx context.Context, tok tokens.Token, resource, client string) (tokens.Token, error) {
	ring, err := a.keyring(ctx)
	if err != nil {
		return tokens.Token{}, err
	}
	return ring.Sign(tok, resource, client), nil
}

// ValidateTimeout bounds the etcd reads of one Validate.
const ValidateTimeout = 3 * time.Second

// CallTimeout bounds each etcd call made for a request (a grant, a lock
// key's creation, a renewal, a release, an observation) apart from a lock
// wait, which the request bounds itself: with etcd gone, a lease call
// answers 503 within seconds instead of hanging for as long as its client
// waits.
const CallTimeout = 3 * time.Second

// bounded is ctx bounded by CallTimeout.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, CallTimeout)
}

// Revision asks etcd, with a linearizable read, for its current revision.
// It doubles as the readiness probe.
func (a *Etcd) Revision(ctx context.Context) (int64, error) {
	resp, err := a.cli.Get(ctx, epochKey, clientv3.WithCountOnly())
	if err != nil {
		return 0, unavailable("read revision", err)
	}
	a.observe(resp.Header.Revision)
	return resp.Header.Revision, nil
}

// observe raises newestRevision to rev if it is higher.
func (a *Etcd) observe(rev int64) {
	for {
		cur := a.newestRevision.Load()
		if rev <= cur || a.newestRevision.CompareAndSwap(cur, rev) {
			return
		}
	}
}

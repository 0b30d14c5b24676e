package authority

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
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
	// halts counts Halt's calls, so that a check lifts only the halts
	// that came before its view of etcd (ResumeFrom); guarded by mu.
	halts int64

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

	// txns sends the lock transactions of acquisitions and the release
	// marks of leases, grouping those that queue (txngroup.go).
	txns *txnGroup
}

// NewEtcd returns the authority for cli, at DefaultEpoch until Resume sets
// the epoch that etcd and PostgreSQL agree on. keks open the signing keys
// and seal new ones; an authority without (nil) reads etcd but never
// signs nor verifies a token (ErrNoKEK): inspect, epoch.
func NewEtcd(cli *clientv3.Client, keks KEKs) *Etcd {
	a := &Etcd{cli: cli, keks: keks, now: time.Now, keysLock: make(chan struct{}, 1), nowLock: make(chan struct{}, 1), txns: newTxnGroup(cli)}
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

// Sign signs tok for resource and client with the newest key.
func (a *Etcd) Sign(ctx context.Context, tok tokens.Token, resource, client string) (tokens.Token, error) {
	ring, err := a.keyring(ctx)
	if err != nil {
		return tokens.Token{}, err
	}
	return ring.Sign(tok, resource, client), nil
}

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

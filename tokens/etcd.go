package tokens

import (
	"context"
	"fmt"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Key layout in etcd. Resources are path-escaped inside lockPrefix so that
// the lock prefix of "a" can never contain the keys of "a/b".
const (
	lockPrefix = "/fencegw/locks/"
	epochKey   = "/fencegw/epoch"
)

// DefaultEpoch is the epoch of a cluster whose operator never bumped it.
const DefaultEpoch = 1

// Etcd is the token authority backed by an etcd cluster. It keeps no lease
// state: any number of gateways may share one cluster.
type Etcd struct {
	cli   *clientv3.Client
	epoch int64

	// newestRevision is the highest revision any etcd response has shown
	// this process. It only grows, so a token at or below it was certainly
	// issued; a token above it costs one linearizable read to re-check.
	newestRevision atomic.Int64
}

// NewEtcd returns the authority for cli, at DefaultEpoch. The epoch is fixed
// until epochs are managed in etcd and PostgreSQL.
func NewEtcd(cli *clientv3.Client) *Etcd {
	return &Etcd{cli: cli, epoch: DefaultEpoch}
}

// Epoch returns the current epoch: the only one whose tokens are accepted.
func (a *Etcd) Epoch() int64 { return a.epoch }

// NewestRevision returns the highest etcd revision this process has seen.
func (a *Etcd) NewestRevision() int64 { return a.newestRevision.Load() }

// Validate checks that the authority issued tok: the epoch is current and
// the revision is not above the newest revision etcd has issued. The second
// check stops "token poisoning": a forged token far in the future would
// otherwise be accepted once and then lock every real holder out forever.
// ctx bounds the etcd read made when tok is newer than any revision seen.
//
// Validation is the authority's word only; the fence comparison in
// PostgreSQL is what keeps a stale holder out.
func (a *Etcd) Validate(ctx context.Context, resource string, tok Token) error {
	if tok.Epoch != a.epoch {
		return &RejectedError{Presented: tok, Reason: fmt.Sprintf("epoch %d is not the current epoch %d", tok.Epoch, a.epoch)}
	}
	if tok.Revision <= a.newestRevision.Load() {
		return nil
	}
	newest, err := a.Revision(ctx)
	if err != nil {
		return err
	}
	if tok.Revision > newest {
		return &RejectedError{Presented: tok, Reason: fmt.Sprintf("revision %d is above the newest revision etcd has issued (%d)", tok.Revision, newest)}
	}
	return nil
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

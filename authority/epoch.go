package authority

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/tokens"
)

// View reads the epoch and identity keys with one linearizable read; the
// response header carries the cluster ID and current revision. It writes
// nothing: a cluster fencegw never used has no identity yet (Identify).
func (a *Etcd) View(ctx context.Context) (tokens.View, error) {
	resp, err := reads(named("epoch", clientv3.OpGet(epochKey)), named("identity", clientv3.OpGet(identityKey))).commit(ctx, a.cli)
	if err != nil {
		return tokens.View{}, unavailable("read epoch", err)
	}
	epoch, err := epochOf(resp.kvs("epoch"))
	if err != nil {
		return tokens.View{}, err
	}
	id, err := identityOf(resp.kvs("identity"))
	if err != nil {
		return tokens.View{}, err
	}
	return tokens.View{Epoch: epoch, ClusterID: strconv.FormatUint(resp.Header.ClusterId, 16), Identity: id, Revision: resp.Header.Revision}, nil
}

// Identify gives the cluster's data an identity, unless it has one: a
// random name written once, which PostgreSQL records beside the epoch. A
// rebuilt cluster (data directory wiped, same flags, so the same cluster
// ID) has none, and gets another: its revision alone could already be
// past the recorded one.
func (a *Etcd) Identify(ctx context.Context) error {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	_, err := txn{
		ifs:  []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(identityKey), "=", 0)},
		then: []txnOp{named("identity", clientv3.OpPut(identityKey, hex.EncodeToString(b[:])))},
	}.commit(ctx, a.cli)
	if err != nil {
		return unavailable("write identity", err)
	}
	return nil
}

// IdentifiedView is View, after Identify if the cluster has no identity.
func (a *Etcd) IdentifiedView(ctx context.Context) (tokens.View, error) {
	v, err := a.View(ctx)
	if err != nil || v.Identity != "" {
		return v, err
	}
	if err := a.Identify(ctx); err != nil {
		return v, err
	}
	return a.View(ctx)
}

// clearForeignKeys deletes the epoch and identity keys if they hold what
// fencegw never writes (ErrForeignKey), unless they changed meanwhile: an
// epoch bump, the operator's decision to trust etcd again, starts afresh.
func (a *Etcd) clearForeignKeys(ctx context.Context) error {
	for _, k := range []struct {
		key   string
		valid func([]*mvccpb.KeyValue) error
	}{
		{epochKey, func(kvs []*mvccpb.KeyValue) error { _, err := epochOf(kvs); return err }},
		{identityKey, func(kvs []*mvccpb.KeyValue) error { _, err := identityOf(kvs); return err }},
	} {
		resp, err := a.cli.Get(ctx, k.key)
		if err != nil {
			return unavailable("read "+k.key, err)
		}
		if k.valid(resp.Kvs) == nil {
			continue
		}
		_, err = txn{
			ifs:  []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k.key), "=", resp.Kvs[0].ModRevision)},
			then: []txnOp{named("delete", clientv3.OpDelete(k.key))},
		}.commit(ctx, a.cli)
		if err != nil {
			return unavailable("delete "+k.key, err)
		}
	}
	return nil
}

// identityOf reads the result of a Get of the identity key: "" while the
// key does not exist.
func identityOf(kvs []*mvccpb.KeyValue) (string, error) {
	if len(kvs) == 0 {
		return "", nil
	}
	id := string(kvs[0].Value)
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%w: %s holds %q, not an identity", ErrForeignKey, identityKey, clip.String(id, 48))
	}
	return id, nil
}

// epochOf reads the result of a Get of the epoch key: DefaultEpoch while
// the key does not exist.
func epochOf(kvs []*mvccpb.KeyValue) (int64, error) {
	if len(kvs) == 0 {
		return tokens.DefaultEpoch, nil
	}
	n, err := strconv.ParseInt(string(kvs[0].Value), 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: %s holds %q, not an epoch", ErrForeignKey, epochKey, clip.String(string(kvs[0].Value), 48))
	}
	return n, nil
}

// epochAt is the epoch key as read: its epoch, and the revision it was
// written at (0: it was not there, and the epoch is DefaultEpoch).
type epochAt struct{ epoch, modRevision int64 }

// seenEpoch is the epoch key as this process last read it; before any
// read, as a cluster fencegw never bumped has it.
func (a *Etcd) seenEpoch() epochAt {
	if e := a.epochRead.Load(); e != nil {
		return *e
	}
	return epochAt{epoch: tokens.DefaultEpoch}
}

// sawEpoch records a read of the epoch key. Reads that race may store an
// older one last: then the next grant that compares it reads it again.
func (a *Etcd) sawEpoch(kvs []*mvccpb.KeyValue) {
	epoch, err := epochOf(kvs)
	if err != nil {
		return
	}
	e := epochAt{epoch: epoch}
	if len(kvs) > 0 {
		e.modRevision = kvs[0].ModRevision
	}
	a.epochRead.Store(&e)
}

// SetEpoch writes the epoch key. Only `fencegw epoch bump` calls it, after
// PostgreSQL has recorded the new epoch.
func (a *Etcd) SetEpoch(ctx context.Context, epoch int64) error {
	if _, err := a.cli.Put(ctx, epochKey, strconv.FormatInt(epoch, 10)); err != nil {
		return unavailable("write epoch", err)
	}
	return nil
}

// Resume makes epoch current and lifts a halt. A new epoch starts its
// revision watermark afresh at rev: a restored etcd counts from lower.
func (a *Etcd) Resume(epoch, rev int64) { a.ResumeFrom(-1, epoch, rev) }

// ResumeFrom is Resume for a check that judged etcd sound in a view it
// read after Halts answered halts: a halt since (a validation that met
// etcd behind what this process saw) stands, for the next check to judge
// on a view as new as it, and ResumeFrom reports false. halts < 0
// resumes whatever came before.
func (a *Etcd) ResumeFrom(halts, epoch, rev int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if halts >= 0 && a.halts != halts && a.haltReason != nil {
		return false
	}
	if epoch != a.epoch.Load() {
		a.newestRevision.Store(rev)
		a.epoch.Store(epoch)
	}
	a.observe(rev)
	a.haltReason = nil
	return true
}

// Halt stops the authority: tokens are refused and no lease is granted or
// renewed until Resume.
func (a *Etcd) Halt(err *tokens.HaltedError) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.haltReason = err
	a.halts++
}

// Halts returns how many times the authority was halted so far: a
// check takes it before it reads etcd, and resumes with ResumeFrom.
func (a *Etcd) Halts() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.halts
}

// Halted returns the reason the authority is halted, or nil.
func (a *Etcd) Halted() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.haltReason == nil {
		return nil
	}
	return a.haltReason
}

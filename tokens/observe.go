package tokens

import (
	"cmp"
	"context"
	"net/url"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxObserved bounds how many contenders Observe reports.
const maxObserved = 100

// Contender is one lease on a resource's lock: the holder or a waiter.
type Contender struct {
	LeaseID LeaseID
	Token   Token
	TTL     time.Duration // remaining, as etcd reports it; 0 if just expired
	Value   string        // set by the holder at acquisition, e.g. a leader's address
}

// LockState is what a resource's lock looks like at one etcd revision.
type LockState struct {
	Resource string
	Revision int64
	Holder   *Contender  // nil when the lock is free
	Waiters  []Contender // in the order they will be granted
}

// Observe reports a resource's holder and waiters without taking part, so a
// lease on "leader/<name>" doubles as leader election with observation.
// ctx bounds the etcd reads (one range read, one TTL read per contender).
func (a *Etcd) Observe(ctx context.Context, resource string) (LockState, error) {
	if err := CheckResource(resource); err != nil {
		return LockState{}, err
	}
	resp, err := a.cli.Get(ctx, lockKeyPrefix(resource), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(maxObserved))
	if err != nil {
		return LockState{}, unavailable("observe lock", err)
	}
	a.observe(resp.Header.Revision)
	st := LockState{Resource: resource, Revision: resp.Header.Revision}
	for _, kv := range resp.Kvs {
		c := Contender{
			LeaseID: LeaseID(kv.Lease),
			Token:   Token{Epoch: a.epoch.Load(), Revision: kv.CreateRevision},
			Value:   string(kv.Value),
		}
		if ttl, err := a.cli.TimeToLive(ctx, clientv3.LeaseID(kv.Lease)); err == nil && ttl.TTL > 0 {
			c.TTL = time.Duration(ttl.TTL) * time.Second
		}
		if st.Holder == nil {
			st.Holder = &c
			continue
		}
		st.Waiters = append(st.Waiters, c)
	}
	return st, nil
}

// checkValue bounds a lock key's value; it lives in etcd, not PostgreSQL.
func checkValue(v string) error {
	const maxValue = 4096
	if len(v) > maxValue || strings.ContainsRune(v, 0) {
		return ErrBadValue
	}
	return nil
}

// ObserveAll reports every resource that has a holder or waiters, in key
// order, from at most limit lock keys (one range read, one TTL read per
// key): what `fencegw inspect` shows.
func (a *Etcd) ObserveAll(ctx context.Context, limit int) ([]LockState, error) {
	resp, err := a.cli.Get(ctx, lockPrefix, clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend), clientv3.WithLimit(int64(limit)))
	if err != nil {
		return nil, unavailable("observe locks", err)
	}
	a.observe(resp.Header.Revision)
	var out []LockState
	for _, kv := range resp.Kvs {
		escaped, _, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), lockPrefix), "/")
		resource, err := url.PathUnescape(escaped)
		if !ok || err != nil {
			continue // not a lock key of ours
		}
		if len(out) == 0 || out[len(out)-1].Resource != resource {
			out = append(out, LockState{Resource: resource, Revision: resp.Header.Revision})
		}
		st := &out[len(out)-1]
		c := Contender{
			LeaseID: LeaseID(kv.Lease),
			Token:   Token{Epoch: a.epoch.Load(), Revision: kv.CreateRevision},
			Value:   string(kv.Value),
		}
		if ttl, err := a.cli.TimeToLive(ctx, clientv3.LeaseID(kv.Lease)); err == nil && ttl.TTL > 0 {
			c.TTL = time.Duration(ttl.TTL) * time.Second
		}
		st.Waiters = append(st.Waiters, c)
	}
	// Keys sort by lease ID within a resource; the holder is the oldest.
	for i := range out {
		st := &out[i]
		slices.SortFunc(st.Waiters, func(x, y Contender) int { return cmp.Compare(x.Token.Revision, y.Token.Revision) })
		holder := st.Waiters[0]
		st.Holder, st.Waiters = &holder, st.Waiters[1:]
	}
	return out, nil
}

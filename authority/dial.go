package authority

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Dial is a plaintext, unauthenticated ClientConfig's Dial: for dev's
// and the tests' etcd.
func Dial(endpoints []string) (*clientv3.Client, error) {
	return ClientConfig{Endpoints: endpoints}.Dial()
}

// StoreSize is etcd's database file size and the part of it in use, as
// the last status read found them: compaction frees space inside the
// file, defragmentation gives it back (docs/operations/compaction-and-pruning.md).
type StoreSize struct{ Total, InUse int64 }

// ReadStoreSize asks every endpoint for its status at once and keeps the
// first answer for StoreSize; the watchdog calls it with each check. All at
// once, not in turn: a call to a member that is down waits until its
// context ends (etcd's client waits for a connection), so a dead first
// endpoint would eat the whole check's time.
func (a *Etcd) ReadStoreSize(ctx context.Context) error {
	eps := a.cli.Endpoints()
	if len(eps) == 0 {
		return nil
	}
	ctx, cancel := bounded(ctx)
	defer cancel() // ends the calls still waiting
	type answer struct {
		endpoint string
		st       *clientv3.StatusResponse
		err      error
	}
	answers := make(chan answer, len(eps))
	for _, ep := range eps {
		go func() {
			st, err := a.cli.Status(ctx, ep)
			answers <- answer{ep, st, err}
		}()
	}
	var errs []error
	for range eps {
		an := <-answers
		if an.err == nil {
			a.dbSize.Store(an.st.DbSize)
			a.dbInUse.Store(an.st.DbSizeInUse)
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", an.endpoint, an.err))
	}
	return unavailable("read etcd's status", errors.Join(errs...))
}

// StoreSize returns what ReadStoreSize found last (zero before).
func (a *Etcd) StoreSize() StoreSize {
	return StoreSize{Total: a.dbSize.Load(), InUse: a.dbInUse.Load()}
}

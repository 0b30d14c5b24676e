package authority

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// Dial returns an etcd client for a gateway or a command. Its reconnects
// back off to at most two seconds: gRPC's default grows to two minutes, so
// after an outage a gateway could stay unready long after etcd was back.
func Dial(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(), // it reports every retry; the gateway logs what matters
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: 2 * time.Second,
		})},
	})
}

// StoreSize is etcd's database file size and the part of it in use, as
// the last status read found them: compaction frees space inside the
// file, defragmentation gives it back (README: etcd).
type StoreSize struct{ Total, InUse int64 }

// ReadStoreSize asks the client's endpoints for their status, in turn,
// until one answers, and keeps that answer for StoreSize; the guard calls
// it with each check. In turn, not only the first: with one member of
// three down, etcd serves, and so must the guard's check.
func (a *Etcd) ReadStoreSize(ctx context.Context) error {
	var errs []error
	for _, ep := range a.cli.Endpoints() {
		st, err := a.status(ctx, ep)
		if err == nil {
			a.dbSize.Store(st.DbSize)
			a.dbInUse.Store(st.DbSizeInUse)
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep, err))
	}
	if len(errs) == 0 {
		return nil
	}
	return unavailable("read etcd's status", errors.Join(errs...))
}

func (a *Etcd) status(ctx context.Context, endpoint string) (*clientv3.StatusResponse, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	return a.cli.Status(ctx, endpoint)
}

// StoreSize returns what ReadStoreSize found last (zero before).
func (a *Etcd) StoreSize() StoreSize {
	return StoreSize{Total: a.dbSize.Load(), InUse: a.dbInUse.Load()}
}

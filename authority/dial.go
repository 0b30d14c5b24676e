package authority

import (
	"context"
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

// ReadStoreSize asks one of the client's endpoints for its status and
// keeps the answer for StoreSize; the guard calls it with each check.
func (a *Etcd) ReadStoreSize(ctx context.Context) error {
	eps := a.cli.Endpoints()
	if len(eps) == 0 {
		return nil
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	st, err := a.cli.Status(ctx, eps[0])
	if err != nil {
		return unavailable("read etcd's status", err)
	}
	a.dbSize.Store(st.DbSize)
	a.dbInUse.Store(st.DbSizeInUse)
	return nil
}

// StoreSize returns what ReadStoreSize found last (zero before).
func (a *Etcd) StoreSize() StoreSize {
	return StoreSize{Total: a.dbSize.Load(), InUse: a.dbInUse.Load()}
}

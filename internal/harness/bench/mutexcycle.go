package bench

import (
	"context"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/tokens"
)

// mutexPrefix holds the yardstick's lock keys, apart from the gateway's.
const mutexPrefix = "/fencegw-bench/mutex/acct/"

// mutexCycle is the yardstick of a lock cycle: what a service with its
// own etcd client does with etcd's recipe, a Session (its lease) and a
// Mutex on it: Lock, optionally the same fenced write direct to
// PostgreSQL with the lock key's revision as token, Unlock, Close.
func mutexCycle(cli *clientv3.Client, store *fence.Store, work workload, epoch int64) writeFunc {
	return func(ctx context.Context, id int64) (kind, detail string) {
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(cycleTTL), concurrency.WithContext(ctx))
		if err != nil {
			return "session", err.Error()
		}
		defer s.Close()
		m := concurrency.NewMutex(s, mutexPrefix+strconv.FormatInt(id, 10))
		if err := m.Lock(ctx); err != nil {
			return "lock", err.Error()
		}
		if store != nil {
			// The revision the lock was taken at: later than every
			// earlier holder's, as a gateway token is.
			tok := tokens.Token{Epoch: epoch, Revision: m.Header().Revision}
			if kind, detail := directWrite(ctx, store, work, []tokens.Token{tok}, id); kind != "" {
				_ = m.Unlock(context.WithoutCancel(ctx))
				return "write " + kind, detail
			}
		}
		if err := m.Unlock(ctx); err != nil {
			return "unlock", err.Error()
		}
		return "", ""
	}
}
